"""Splitting remaining work into units, and running units on a bounded thread pool.

A unit is the smallest piece of work that is written to the run folder as a whole. Units never
span two wikis (so per-wiki politeness limits apply naturally) and are named by a hash of their
content, so that a rerun computes the remaining work from what is on disk, whatever was finished
before, and never mixes up units of different attempts.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from itertools import groupby
from typing import TypeVar

from m4build.runs import stable_hash

T = TypeVar("T")
R = TypeVar("R")


def plan_units(
    work: Iterable[T], wiki_of: Callable[[T], str], size: int, key: Callable[[T], Hashable]
) -> list[tuple[str, list[T]]]:
    """Group sorted work by wiki, cut each wiki's work into units of ``size``, name each unit."""
    ordered = sorted(work, key=lambda item: (wiki_of(item), key(item)))
    units: list[tuple[str, list[T]]] = []
    for wiki, group in groupby(ordered, key=wiki_of):
        members = list(group)
        for start in range(0, len(members), size):
            chunk = members[start : start + size]
            name = f"{wiki}-{stable_hash([repr(key(member)) for member in chunk], 12)}"
            units.append((name, chunk))
    return units


def run_units(
    units: Sequence[tuple[str, Sequence[T]]],
    work: Callable[[str, Sequence[T]], R],
    workers: int,
) -> Iterator[tuple[str, R]]:
    """Run ``work`` on every unit with at most ``workers`` in flight; yield units as they finish.

    Submission is lazy (never more than ``workers`` pending futures), so an interrupt cancels
    cleanly and memory stays flat whatever the number of units.
    """
    pending: dict[Future[R], str] = {}
    queue = iter(units)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="m4build") as pool:
        try:
            while True:
                while len(pending) < workers:
                    nxt = next(queue, None)
                    if nxt is None:
                        break
                    name, members = nxt
                    pending[pool.submit(work, name, members)] = name
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    name = pending.pop(future)
                    yield name, future.result()
        finally:
            for future in pending:
                future.cancel()
