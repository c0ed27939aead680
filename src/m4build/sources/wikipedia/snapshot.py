"""The ``snapshot`` Wikipedia source: local article files searched with BM25, zero requests.

What it reads and what of each article it indexes: ``snapshot_inputs``. How the index is built
(one streaming, resumable pass in bounded memory, cached per set of inputs): ``snapshot_build``.
This module opens the built index: a memory-mapped bm25s index and a SQLite doc store per wiki,
searched and fetched from many threads at once.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from threading import Lock
from typing import Any

import bm25s
import numpy as np

from m4build.errors import UsageError
from m4build.records import Article, FetchFailure, PageHit, PageRef
from m4build.sources.wikipedia.base import SourceStats
from m4build.sources.wikipedia.snapshot_build import (
    FORMAT_VERSION,
    MANIFEST,
    Progress,
    built_folder,
    default_cache_dir,
)
from m4build.sources.wikipedia.snapshot_inputs import (
    ARTICLE_SCHEMA,
    LEAD_CHARS,
    WIKI_NAME,
    index_text,
    input_files,
)
from m4build.sources.wikipedia.snapshot_prepare import HTML_CODEC
from m4build.text.tokenize import tokenize

_SQL_BATCH = 500  # below SQLite's limit on bound parameters


# --- searching and fetching ---------------------------------------------------------------


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best matching documents: score descending, then position ascending.

    Positions follow page ids, so ties are broken by page id. Documents sharing no term with the
    query (score 0) are never returned, as MediaWiki's search would not return them.
    """
    matched = np.flatnonzero(scores > 0)
    if len(matched) > k:
        kth = np.partition(scores[matched], len(matched) - k)[len(matched) - k]
        matched = matched[scores[matched] >= kth]
    order = np.lexsort((matched, -scores[matched]))
    return matched[order][:k]


class _WikiIndex:
    """One wiki's memory-mapped BM25 index and its doc store, safe to share between threads."""

    def __init__(self, folder: Path) -> None:
        self.retriever = bm25s.BM25.load(folder / "bm25", mmap=True, show_progress=False)
        self.page_ids = np.load(folder / "page_ids.npy", mmap_mode="r")
        # immutable=1: the store never changes after the build, so SQLite may skip all locking.
        uri = f"{(folder / 'docs.sqlite').resolve().as_uri()}?mode=ro&immutable=1"
        self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self.lock = Lock()

    def search(self, query: str, k: int) -> list[int]:
        vocab = self.retriever.vocab_dict
        ids = [vocab[token] for token in tokenize(query) if token in vocab]
        if not ids or k <= 0:
            return []
        scores = self.retriever.get_scores_from_ids(ids)
        return [int(self.page_ids[position]) for position in _top(scores, k)]

    def rows(self, columns: str, page_ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        """``page_id -> row`` for the pages the store holds (the page id is each row's first field)."""
        found: dict[int, tuple[Any, ...]] = {}
        unique = sorted(set(page_ids))
        for start in range(0, len(unique), _SQL_BATCH):
            batch = unique[start : start + _SQL_BATCH]
            marks = ",".join("?" * len(batch))
            with self.lock:
                cursor = self.db.execute(
                    f"SELECT page_id, {columns} FROM articles WHERE page_id IN ({marks})", batch
                )
                found.update((row[0], row) for row in cursor.fetchall())
        return found

    def close(self) -> None:
        with self.lock:
            self.db.close()


def _paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str | os.PathLike[str]]:
    """One path or many: a lone string must not be taken as a sequence of characters."""
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    return list(paths)


class SnapshotSource:
    """A ``WikipediaSource`` over local article files, searched with BM25; never touches the network.

    ``SnapshotSource(paths, cache_dir)`` loads the cached index for these inputs, or builds it in
    one streaming, resumable pass (see ``snapshot_build``). ``wiki`` names the wiki of inputs whose records
    do not say it (the wikimedia/wikipedia parquet); ``progress`` is called with the number of
    records read during a build; ``workers`` is how many processes prepare records during a build (by
    default none for small inputs, the spare cores for large ones; see ``snapshot_prepare``).
    """

    name = "snapshot"

    def __init__(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        cache_dir: str | os.PathLike[str] | None = None,
        *,
        wiki: str | None = None,
        progress: Progress | None = None,
        workers: int | None = None,
    ) -> None:
        if wiki is not None and not WIKI_NAME.fullmatch(wiki):
            raise UsageError(
                f"{wiki!r} is not a Wikipedia database name", "Name a wiki like 'enwiki' or 'zh_yuewiki'."
            )
        self.stats = SourceStats()
        files = input_files(_paths(paths))
        folder, cached = built_folder(
            files,
            wiki,
            Path(cache_dir) if cache_dir is not None else default_cache_dir(),
            self.stats,
            progress,
            workers,
        )
        self.cache_path = folder
        self.manifest: dict[str, Any] = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        """What the index was built from and how: inputs, article counts per wiki, build time."""
        self._indexes = {name: _WikiIndex(folder / name) for name in sorted(self.manifest["wikis"])}
        self.stats.update("cache_hits" if cached else "index_builds", len(self._indexes))

    @property
    def wikis(self) -> tuple[str, ...]:
        """The wikis the snapshot holds articles of, sorted."""
        return tuple(self._indexes)

    def search(self, wiki: str, query: str, k: int) -> list[PageHit]:
        """Top ``k`` articles by BM25 over title + lead; ties go to the lower page id."""
        self.stats.update("search")
        index = self._indexes.get(wiki)
        if index is None:
            return []
        page_ids = index.search(query, k)
        rows = index.rows("revision_id, title, wikidata_id", page_ids)
        return [
            PageHit(wiki, page_id, rows[page_id][1], rows[page_id][2], rank, wikidata_id=rows[page_id][3])
            for rank, page_id in enumerate(page_ids, start=1)
        ]

    def fetch(self, wiki: str, pages: Sequence[PageRef]) -> Iterator[Article | FetchFailure]:
        """The stored revision of each page, or a ``missing`` failure when the snapshot lacks it.

        Pages are read from the store a batch at a time, so a long request never holds all its
        HTML in memory.
        """
        for start in range(0, len(pages), _SQL_BATCH):
            yield from self._fetch_batch(wiki, pages[start : start + _SQL_BATCH])

    def _fetch_batch(self, wiki: str, pages: Sequence[PageRef]) -> Iterator[Article | FetchFailure]:
        index = self._indexes.get(wiki)
        columns = "revision_id, title, url, wikidata_id, retrieved_at, html_size, html_zstd"
        rows = index.rows(columns, [page.page_id for page in pages]) if index else {}
        for page in pages:
            self.stats.update("fetch")
            row = rows.get(page.page_id)
            if row is None or row[1] != page.revision_id:
                self.stats.update("fetch_missing")
                yield FetchFailure(
                    wiki, page.page_id, page.revision_id, page.title, "missing", _why_missing(wiki, row)
                )
                continue
            _, revision_id, title, url, wikidata_id, retrieved_at, size, blob = row
            html = HTML_CODEC.decompress(blob, decompressed_size=size, asbytes=True).decode("utf-8")
            yield Article(
                wiki, page.page_id, revision_id, title, url, html, wikidata_id, retrieved_at, self.name
            )

    def close(self) -> None:
        for index in self._indexes.values():
            index.close()

    def __enter__(self) -> SnapshotSource:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _why_missing(wiki: str, row: tuple[Any, ...] | None) -> str:
    if row is None:
        return f"the snapshot holds no such page on {wiki}"
    return f"the snapshot holds revision {row[1]} of this page"


__all__ = [
    "ARTICLE_SCHEMA",
    "FORMAT_VERSION",
    "LEAD_CHARS",
    "Progress",
    "SnapshotSource",
    "default_cache_dir",
    "index_text",
]
