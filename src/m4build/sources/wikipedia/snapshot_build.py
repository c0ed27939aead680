"""Building a snapshot's index: one streaming, resumable pass over the inputs, in bounded memory.

Per wiki, the pass fills a doc store and a BM25 index (``m4build.bm25_writer``) of what
``index_text`` keeps of each article. Memory holds the vocabulary and fixed-size buffers, never
the articles nor their token lists, so English Wikipedia's 6M articles build on a 24 GiB machine.

Doc store. SQLite, one row per page (``page_id`` is the primary key) with the HTML compressed
by zstd (through pyarrow, no extra dependency): a fetch is one B-tree lookup, whereas a parquet
row group would have to be decompressed whole for a single article. Documents in the BM25 index
are ordered by page id, so ties are broken by page id without any lookup.

One revision per page: a snapshot is one point in time, so when the inputs hold several
revisions of a page the highest revision id is kept (the first one read, in path order, on a
tie). The store decides: a record is written, and indexed, only if its page is new or its
revision newer than the one held; each row keeps the slot of the document indexed for it, and
the index is made of exactly those slots, in page-id order.

Resuming. Every ``CHECKPOINT_RECORDS`` records, at the end of each input file and on Ctrl-C
(held until the record in hand is done; a second Ctrl-C stops at once), the build checkpoints:
the store commits, the BM25 writer puts its open block on disk, and ``progress.json`` (written
atomically, last) records how far the inputs were read and the writers' states. A killed build
leaves its work in ``{fingerprint}.partial``; the next open of the same inputs takes it up from
the last checkpoint: store rows written after it (by their slot) are deleted, and the records
after it are read again. An exclusive file lock (``filelock``, released by the OS when a process
dies) keeps two processes from building the same inputs at once: the second waits, then loads
what the first built. The manifest is written last; then the work files only a resume needs are
removed and the folder is renamed to ``{fingerprint}``.

Cache. Both live under ``cache_dir/{fingerprint}/{wiki}/``, where the fingerprint hashes the
resolved input paths, their sizes and mtimes, the ``wiki=`` argument and ``FORMAT_VERSION``;
a rerun memory-maps the saved index instead of rebuilding.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from itertools import chain
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from filelock import FileLock

from m4build.bm25_writer import Bm25Writer
from m4build.errors import InputFileError
from m4build.runs import atomic_write_json, stable_hash
from m4build.sources.wikipedia.base import SourceStats
from m4build.sources.wikipedia.snapshot_inputs import LEAD_CHARS, SnapshotRecord, iso_mtime, read_records
from m4build.sources.wikipedia.snapshot_prepare import Prepared, RecordPreparer, default_workers

FORMAT_VERSION = 3
"""Bump when the tokenizer, the indexed text or the cache layout changes: old caches then miss."""

MANIFEST = "manifest.json"
CHECKPOINT_RECORDS = 100_000
"""Records read between two checkpoints: what a killed build may have to read again."""

_PROGRESS = "progress.json"
_COUNTS = ("records", "skipped_non_article", "duplicate_pages")

Progress = Callable[[int], None]
"""Called with the number of input records read so far (counting those read before a resume)."""


def default_cache_dir() -> Path:
    """Where snapshot indexes go when no ``cache_dir`` is given: ``$XDG_CACHE_HOME/m4build/snapshots``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "m4build" / "snapshots"


def fingerprint(files: Sequence[Path], wiki: str | None) -> str:
    inputs = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    return stable_hash({"format": FORMAT_VERSION, "wiki": wiki, "inputs": inputs}, length=20)


class _WikiBuilder:
    """One wiki's store and BM25 writer; resumed from ``state`` when a checkpoint holds one."""

    def __init__(self, folder: Path, state: dict[str, Any] | None = None) -> None:
        if state is None:
            shutil.rmtree(folder, ignore_errors=True)  # a wiki first seen after the last checkpoint
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.writer = Bm25Writer(folder / "bm25-work", resume=state["bm25"] if state else None)
        self.db = sqlite3.connect(folder / "docs.sqlite")
        # A rollback journal keeps the store whole when the process is killed mid-transaction;
        # no fsync, since a crash of the machine itself only costs a rebuild.
        self.db.executescript(
            "PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF;"
            "CREATE TABLE IF NOT EXISTS articles (page_id INTEGER PRIMARY KEY,"
            " revision_id INTEGER NOT NULL, title TEXT NOT NULL, url TEXT NOT NULL, wikidata_id TEXT,"
            " retrieved_at TEXT NOT NULL, html_size INTEGER NOT NULL, html_zstd BLOB NOT NULL,"
            " slot INTEGER NOT NULL);"
        )
        # Rows of records read after the checkpoint are reread: drop them, as if never written.
        self.db.execute("DELETE FROM articles WHERE slot >= ?", (self.writer.documents,))
        self.db.commit()

    def add(self, record: SnapshotRecord, retrieved_at: str, prepared: Prepared) -> bool:
        """Stores and indexes the record unless a revision at least as new is held; says whether it did."""
        slot = self.writer.documents
        stored = self.db.execute(
            "INSERT INTO articles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (page_id) DO UPDATE SET"
            " revision_id = excluded.revision_id, title = excluded.title, url = excluded.url,"
            " wikidata_id = excluded.wikidata_id, retrieved_at = excluded.retrieved_at,"
            " html_size = excluded.html_size, html_zstd = excluded.html_zstd, slot = excluded.slot"
            " WHERE excluded.revision_id > articles.revision_id",
            (
                record.page_id,
                record.revision_id,
                record.title,
                record.url,
                record.wikidata_id,
                retrieved_at,
                prepared.html_size,
                prepared.html_zstd,
                slot,
            ),
        ).rowcount
        if not stored:
            return False
        self.writer.add(prepared.counts)
        return True

    def checkpoint(self) -> dict[str, Any]:
        self.db.commit()
        return {"bm25": self.writer.checkpoint()}

    def finish(self) -> int:
        """Writes the BM25 index (documents in page-id order) and closes the store; returns the count."""
        self.db.commit()
        rows = self.db.execute("SELECT page_id, slot FROM articles ORDER BY page_id")
        kept = np.fromiter(chain.from_iterable(rows), dtype=np.int64).reshape(-1, 2)
        self.db.close()
        count = self.writer.finish(self.folder / "bm25", order=kept[:, 1])
        np.save(self.folder / "page_ids.npy", kept[:, 0])
        return count

    def close(self) -> None:
        self.db.close()


class _Build:
    """The pass over the inputs, with where it stands: file, records read in it, counts, builders."""

    def __init__(self, files: Sequence[Path], wiki: str | None, folder: Path) -> None:
        self.files, self.wiki, self.folder = files, wiki, folder
        folder.mkdir(parents=True, exist_ok=True)
        saved = _read_progress(folder)
        self.file_index: int = saved.get("file_index", 0)
        self.records_in_file: int = saved.get("records_in_file", 0)
        self.counts: dict[str, int] = saved.get("counts", dict.fromkeys(_COUNTS, 0))
        self.seconds: float = saved.get("seconds", 0.0)
        self.resumed_records = self.counts["records"]
        self.between_records = True  # False while a record is half processed: no checkpoint then
        self.builders = {
            name: _WikiBuilder(folder / name, state) for name, state in sorted(saved.get("wikis", {}).items())
        }
        self.started = time.monotonic()

    def run(self, progress: Progress | None, workers: int) -> dict[str, int]:
        """Reads every record after the checkpoint, then writes the indexes; returns articles per wiki."""
        try:
            with RecordPreparer(workers) as preparer, _ctrl_c_between_records() as ctrl_c:
                self._read_all(preparer, progress, ctrl_c)
        except BaseException:
            if self.between_records:  # interrupted at a clean point: keep everything read so far
                self.checkpoint()
            self.close()
            raise
        return {name: self.builders[name].finish() for name in sorted(self.builders)}

    def _read_all(self, preparer: RecordPreparer, progress: Progress | None, ctrl_c: list[int]) -> None:
        while self.file_index < len(self.files):
            path = self.files[self.file_index]
            retrieved_at = iso_mtime(path)
            for record, prepared in preparer.pair(_records_after(path, self.wiki, self.records_in_file)):
                self.between_records = False
                self._add(record, retrieved_at, prepared)
                self.records_in_file += 1
                self.between_records = True
                if progress is not None:
                    progress(self.counts["records"])
                if ctrl_c:
                    raise KeyboardInterrupt
                if self.counts["records"] % CHECKPOINT_RECORDS == 0:
                    self.checkpoint()
            self.file_index, self.records_in_file = self.file_index + 1, 0
            self.checkpoint()

    def _add(self, record: SnapshotRecord | None, retrieved_at: str, prepared: Prepared | None) -> None:
        self.counts["records"] += 1
        if record is None or prepared is None:
            self.counts["skipped_non_article"] += 1
            return
        builder = self.builders.get(record.wiki)
        if builder is None:
            builder = self.builders[record.wiki] = _WikiBuilder(self.folder / record.wiki)
        if not builder.add(record, record.date_modified or retrieved_at, prepared):
            self.counts["duplicate_pages"] += 1

    def checkpoint(self) -> None:
        wikis = {name: builder.checkpoint() for name, builder in sorted(self.builders.items())}
        progress = {
            "format": FORMAT_VERSION,
            "file_index": self.file_index,
            "records_in_file": self.records_in_file,
            "counts": self.counts,
            "seconds": self.elapsed(),
            "wikis": wikis,
        }
        atomic_write_json(self.folder / _PROGRESS, progress)

    def elapsed(self) -> float:
        return round(self.seconds + time.monotonic() - self.started, 3)

    def close(self) -> None:
        for builder in self.builders.values():
            builder.close()


@contextmanager
def _ctrl_c_between_records() -> Iterator[list[int]]:
    """Holds a first Ctrl-C until the record in hand is done, so that the build can checkpoint
    everything read so far (a Ctrl-C almost always lands inside a record's store and index steps).

    Yields the list the held signal goes into; a second Ctrl-C interrupts at once. Only the main
    thread can take signals: elsewhere, and under a caller's own SIGINT handler, nothing changes.
    """
    held: list[int] = []

    def hold(signum: int, frame: object) -> None:
        if held:
            raise KeyboardInterrupt
        held.append(signum)

    owned = threading.current_thread() is threading.main_thread()
    owned = owned and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    previous = signal.signal(signal.SIGINT, hold) if owned else None
    try:
        yield held
    finally:
        if owned:
            signal.signal(signal.SIGINT, previous)


def _read_progress(folder: Path) -> dict[str, Any]:
    path = folder / _PROGRESS
    if not path.is_file():
        return {}
    saved = json.loads(path.read_text(encoding="utf-8"))
    return saved if saved.get("format") == FORMAT_VERSION else {}


def _records_after(path: Path, wiki: str | None, done: int) -> Iterator[SnapshotRecord | None]:
    """The file's records after the first ``done`` (read again, but neither stored nor indexed)."""
    records = read_records(path, wiki)
    for _ in range(done):
        next(records)
    yield from records


def _build(
    files: Sequence[Path],
    wiki: str | None,
    folder: Path,
    stats: SourceStats,
    progress: Progress | None,
    workers: int,
) -> None:
    """The pass (resumed where a checkpoint says), the indexes, then the manifest (written last)."""
    build = _Build(files, wiki, folder)
    if build.resumed_records:
        stats.update("resumed_after_records", build.resumed_records)
    articles = build.run(progress, workers)
    for key, value in build.counts.items():
        stats.update(key, value)
    manifest = {
        "format": FORMAT_VERSION,
        "inputs": [
            {"path": str(f), "bytes": f.stat().st_size, "mtime_ns": f.stat().st_mtime_ns} for f in files
        ],
        "wiki_argument": wiki,
        "wikis": articles,
        "vocabulary": {name: build.builders[name].writer.vocabulary for name in articles},
        **build.counts,
        "indexed_text": f"title + lead (paragraphs before the first h2, at most {LEAD_CHARS} characters)",
        "bm25s": bm25s.__version__,
        "build_seconds": build.elapsed(),
        "resumed_after_records": build.resumed_records,
        "preparing_workers": workers,
    }
    atomic_write_json(folder / MANIFEST, manifest)


def _publish(partial: Path, final: Path) -> None:
    """Drops what only a resume needed (spilled postings, progress), then puts the index in place."""
    for work in partial.glob("*/bm25-work"):
        shutil.rmtree(work)
    (partial / _PROGRESS).unlink(missing_ok=True)
    partial.rename(final)


def built_folder(
    files: Sequence[Path],
    wiki: str | None,
    cache_dir: Path,
    stats: SourceStats,
    progress: Progress | None,
    workers: int | None = None,
) -> tuple[Path, bool]:
    """The complete index folder for these inputs, built (or resumed) if needed; and whether it was cached."""
    name = fingerprint(files, wiki)
    final = cache_dir / name
    if (final / MANIFEST).is_file():
        return final, True
    cache_dir.mkdir(parents=True, exist_ok=True)
    lock = cache_dir / f"{name}.lock"
    with FileLock(lock):  # an OS lock: released if the process dies
        cached = (final / MANIFEST).is_file()  # built by another process while this one waited
        if not cached:
            try:
                _build_and_publish(files, wiki, final, stats, progress, workers)
            except InputFileError:  # the inputs must change, and with them the fingerprint
                shutil.rmtree(final.with_name(f"{name}.partial"), ignore_errors=True)
                _remove(lock)
                raise
    # Only once the index is complete: a process that holds or waits for the lock now only loads it.
    _remove(lock)
    return final, cached


def _build_and_publish(
    files: Sequence[Path],
    wiki: str | None,
    final: Path,
    stats: SourceStats,
    progress: Progress | None,
    workers: int | None,
) -> None:
    if final.exists():  # without a manifest: not made by a build (renames are atomic); unusable
        shutil.rmtree(final)
    partial = final.with_name(f"{final.name}.partial")
    if not (partial / MANIFEST).is_file():  # else killed after building, before publishing
        if workers is None:
            workers = default_workers(sum(f.stat().st_size for f in files))
        _build(files, wiki, partial, stats, progress, workers)
    _publish(partial, final)


def _remove(lock: Path) -> None:
    """A lock file is litter once the index is complete, or the inputs are known to be bad."""
    with suppress(OSError):  # e.g. held open by a waiting process on Windows
        lock.unlink()
