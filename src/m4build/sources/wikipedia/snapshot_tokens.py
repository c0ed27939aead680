"""The tokens BM25 indexes of each record, computed by worker processes while the build stores.

Why: the build's pass is CPU-bound and Python runs it on one core. Cutting the lead out of an
article's HTML and tokenising it is half of each record's cost, needs nothing but the record,
and can run elsewhere; storing (zstd, SQLite) and indexing (the vocabulary) stay in the building
process, in input order, so the result is the same byte for byte whatever the number of workers.

Records go to the workers in batches, a bounded number in flight, so memory holds a few batches
of HTML at most. Workers ignore Ctrl-C: the building process takes it, checkpoints, and stops
them. They are spawned (not forked), which is safe beside the threads of a progress display.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from multiprocessing.pool import AsyncResult, Pool
from types import TracebackType

from m4build.sources.wikipedia.snapshot_inputs import SnapshotRecord, index_text
from m4build.text.tokenize import tokenize

BATCH = 256
"""Records per task sent to a worker."""

PARALLEL_FROM_BYTES = 64 * 2**20
"""Inputs smaller than this are tokenised in the building process: starting workers costs ~1 s."""

_Job = tuple[str, str | None, str | None]  # title, lead (plain-text inputs) or None, HTML or None


def default_workers(input_bytes: int) -> int:
    """Workers worth starting for inputs of this size: none for small ones, else the spare cores (up to 3).

    The building process itself keeps one core busy; past three workers it is the bottleneck.
    """
    if input_bytes < PARALLEL_FROM_BYTES:
        return 0
    return max(0, min(3, (os.cpu_count() or 1) - 1))


def indexed_tokens(title: str, lead: str | None, html: str | None) -> list[str]:
    """What BM25 indexes of an article, tokenised: its title and lead (see ``index_text``)."""
    text = f"{title}\n{lead}" if lead is not None else index_text(title, html or "")
    return tokenize(text)


def _job(record: SnapshotRecord) -> _Job:
    if record.lead is not None:  # plain text: the lead is at hand, the HTML need not travel
        return (record.title, record.lead, None)
    return (record.title, None, record.html)


def _tokenize_batch(jobs: list[_Job | None]) -> list[list[str] | None]:
    return [None if job is None else indexed_tokens(*job) for job in jobs]


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


Tokenized = tuple[SnapshotRecord | None, list[str] | None]


class Tokenizer:
    """Pairs each record with its tokens, in input order; ``workers=0`` does it in this process."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool: Pool | None = None
        if workers > 0:
            context = multiprocessing.get_context("spawn")
            self.pool = context.Pool(workers, initializer=_ignore_interrupts)

    def pair(self, records: Iterable[SnapshotRecord | None]) -> Iterator[Tokenized]:
        if self.pool is None:
            for record in records:
                yield record, None if record is None else indexed_tokens(*_job(record))
            return
        yield from self._pair_in_workers(self.pool, iter(records))

    def _pair_in_workers(self, pool: Pool, records: Iterator[SnapshotRecord | None]) -> Iterator[Tokenized]:
        in_flight: deque[tuple[list[SnapshotRecord | None], AsyncResult[list[list[str] | None]]]] = deque()
        failure: Exception | None = None
        try:
            while batch := list(islice(records, BATCH)):
                jobs = [None if record is None else _job(record) for record in batch]
                in_flight.append((batch, pool.apply_async(_tokenize_batch, (jobs,))))
                if len(in_flight) > 2 * self.workers:
                    yield from _done(*in_flight.popleft())
        except Exception as exc:  # a bad record: what was read before it is still processed first
            failure = exc
        while in_flight:
            yield from _done(*in_flight.popleft())
        if failure is not None:
            raise failure

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None

    def __enter__(self) -> Tokenizer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def _done(
    batch: list[SnapshotRecord | None], result: AsyncResult[list[list[str] | None]]
) -> Iterator[Tokenized]:
    yield from zip(batch, result.get())
