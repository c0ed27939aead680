"""Progress reporting that pipelines can use without knowing whether a terminal is attached."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Advance = Callable[[int], None]


class ProgressReporter(Protocol):
    def task(self, description: str, total: int | None) -> AbstractContextManager[Advance]: ...


def counting(advance: Advance) -> Callable[[int], None]:
    """Adapt a callback that reports a running total (records read so far) to ``advance``."""
    seen = 0

    def report(total_so_far: int) -> None:
        nonlocal seen
        advance(total_so_far - seen)
        seen = total_so_far

    return report


class NullProgress:
    """Reports nothing; for library use and tests."""

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        yield lambda n: None


class RichProgress:
    """A rich progress bar per task, on stderr so that stdout stays clean for summaries."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        """A bar for ``total`` steps, or a running count when the total is not known in advance."""
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=self.console, transient=False) as progress:
            task_id = progress.add_task(description, total=total)
            yield lambda n: progress.advance(task_id, n)
