"""What the store and the index need of each record, computed by worker processes while the build stores.

Why: the build's pass is CPU-bound and Python runs it on one core. Cutting the lead out of an
article's HTML, tokenising and counting it, and compressing the HTML are most of each record's
cost, need nothing but the record, and can run elsewhere; storing (SQLite) and indexing (the
vocabulary) stay in the building process, in input order, so the result is the same byte for
byte whatever the number of workers.

Records go to the workers in batches, one batch in flight per worker, so memory holds a few
batches of HTML at most. A worker is ``python -m m4build.sources.wikipedia.snapshot_tokens``
exchanging pickled batches over its standard input and output: unlike ``multiprocessing`` it
never re-imports the caller's script (which fails in a script without a ``__main__`` guard) and
never forks a process that has other threads (a progress display). Workers ignore Ctrl-C: the
building process takes it, checkpoints, and stops them.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from itertools import islice
from types import TracebackType
from typing import NamedTuple

import pyarrow as pa

from m4build.sources.wikipedia.snapshot_inputs import SnapshotRecord, index_text
from m4build.text.tokenize import tokenize

HTML_CODEC = pa.Codec("zstd", compression_level=3)

BATCH = 256
"""Records per task sent to a worker."""

PARALLEL_FROM_BYTES = 64 * 2**20
"""Inputs smaller than this are prepared in the building process: starting workers costs ~1 s."""

_Job = tuple[str, str | None, str]  # title, lead (plain-text inputs) or None, HTML


class Prepared(NamedTuple):
    """A record made ready to store and index."""

    counts: Counter[str]  # how often each token of the indexed text occurs in it
    html_size: int  # bytes of UTF-8 HTML
    html_zstd: bytes


def default_workers(input_bytes: int) -> int:
    """Workers worth starting for inputs of this size: none for small ones, else the spare cores (up to 3).

    The building process itself keeps one core busy; past three workers it is the bottleneck.
    """
    if input_bytes < PARALLEL_FROM_BYTES:
        return 0
    return max(0, min(3, (os.cpu_count() or 1) - 1))


def prepare(title: str, lead: str | None, html: str) -> Prepared:
    """Counts the tokens BM25 indexes of an article (title and lead, see ``index_text``), and
    compresses its HTML; a plain-text article's lead is at hand, without parsing the HTML."""
    text = f"{title}\n{lead}" if lead is not None else index_text(title, html)
    data = html.encode("utf-8")
    return Prepared(Counter(tokenize(text)), len(data), HTML_CODEC.compress(data, asbytes=True))


def _job(record: SnapshotRecord) -> _Job:
    return (record.title, record.lead, record.html)


def _prepare_batch(jobs: list[_Job | None]) -> list[Prepared | None]:
    return [None if job is None else prepare(*job) for job in jobs]


Paired = tuple[SnapshotRecord | None, Prepared | None]


class _Worker:
    """One preparing process, fed a batch at a time."""

    def __init__(self) -> None:
        command = [sys.executable, "-m", __name__]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(self, jobs: list[_Job | None]) -> None:
        assert self.process.stdin is not None
        pickle.dump(jobs, self.process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.process.stdin.flush()

    def receive(self) -> list[Prepared | None]:
        assert self.process.stdout is not None
        try:
            return pickle.load(self.process.stdout)
        except EOFError:
            code = self.process.wait()
            message = f"a worker preparing records exited with code {code} (its error is above)"
            raise RuntimeError(message) from None

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class RecordPreparer:
    """Pairs each record with what ``prepare`` makes of it, in input order; ``workers=0`` prepares
    them in this process."""

    def __init__(self, workers: int) -> None:
        self.workers = [_Worker() for _ in range(workers)]

    def pair(self, records: Iterable[SnapshotRecord | None]) -> Iterator[Paired]:
        if not self.workers:
            for record in records:
                yield record, None if record is None else prepare(*_job(record))
            return
        yield from self._pair_in_workers(iter(records))

    def _pair_in_workers(self, records: Iterator[SnapshotRecord | None]) -> Iterator[Paired]:
        """Batches go round the workers. A worker gets its next batch as soon as it hands back its
        last one, before that one is processed here, so that both sides are always busy."""
        in_flight: deque[tuple[list[SnapshotRecord | None], _Worker]] = deque()
        failure: Exception | None = None
        try:
            while batch := list(islice(records, BATCH)):
                jobs = [None if record is None else _job(record) for record in batch]
                done: Iterator[Paired] | None = None
                if len(in_flight) == len(self.workers):
                    oldest, worker = in_flight.popleft()
                    done = zip(oldest, worker.receive())
                else:
                    worker = self.workers[len(in_flight)]
                worker.send(jobs)
                in_flight.append((batch, worker))
                if done is not None:
                    yield from done
        except Exception as exc:  # a bad record: what was read before it is still processed first
            failure = exc
        while in_flight:
            oldest, worker = in_flight.popleft()
            yield from zip(oldest, worker.receive())
        if failure is not None:
            raise failure

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers = []

    def __enter__(self) -> RecordPreparer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def _serve() -> None:
    """A worker's life: read a batch of jobs, write back what ``prepare`` makes of them, until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            jobs = pickle.load(source)
        except EOFError:
            return
        pickle.dump(_prepare_batch(jobs), sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


if __name__ == "__main__":
    # Run from the module's importable name, so that what it pickles names that module, not __main__.
    from m4build.sources.wikipedia.snapshot_prepare import _serve as serve

    serve()
