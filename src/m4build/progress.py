"""Progress reporting that pipelines can use without knowing whether a terminal is attached."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

Advance = Callable[[int], None]


class ProgressReporter(Protocol):
    def task(self, description: str, total: int) -> AbstractContextManager[Advance]: ...


class NullProgress:
    """Reports nothing; for library use and tests."""

    @contextmanager
    def task(self, description: str, total: int) -> Iterator[Advance]:
        yield lambda n: None


class RichProgress:
    """A rich progress bar per task, on stderr so that stdout stays clean for summaries."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)

    @contextmanager
    def task(self, description: str, total: int) -> Iterator[Advance]:
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
