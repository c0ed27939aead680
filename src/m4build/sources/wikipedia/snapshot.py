"""The ``snapshot`` Wikipedia source: local article files searched with BM25, zero requests.

Inputs (files, or folders searched recursively for them):

- Wikimedia Enterprise HTML dump records: ``.ndjson``, ``.ndjson.gz``, ``.json`` (one record,
  possibly pretty-printed), and the dump packaging ``.tar.gz`` whose ``.ndjson`` members are read
  as a stream (the archive is never extracted). Only namespace-0 records are kept; a record
  without ``namespace`` is taken as an article, as in the article-only dumps.
- A parquet of articles in our schema (``ARTICLE_SCHEMA``), or in the ``wikimedia/wikipedia``
  Hugging Face schema (``id``, ``url``, ``title``, ``text``). That schema carries plain text, no
  HTML, no wiki and no revision: each line of text becomes a ``<p>`` (so the section parser sees
  a lead; the index takes that same lead from the lines themselves, since parsing back HTML we
  just wrote took a fifth of the build), the revision id is 0 ("unknown"; MediaWiki never uses
  0), and the wiki is the ``wiki=`` argument or, failing that, read from the path: a database
  name such as ``enwiki`` in a file or folder name, or the dataset's ``20231101.en`` folder.

Build. One streaming pass over the inputs builds, per wiki, a BM25 index (bm25s) and a doc
store; only token ids stay in memory, never HTML. What is indexed is the title plus the lead
(the paragraphs before the first ``<h2>``, at most ``LEAD_CHARS`` characters). Measured on the 44
real fixture pages (9.8 MB of HTML): title + full text took 1.9 s (0.5 s HTML parsing, 1.4 s
tokenising; 2,372 distinct terms per article), title + lead 0.06 s (the HTML is cut at the
first ``<h2>`` before it is parsed; 118 distinct terms per article). That is 30x faster and a 20x
smaller index, the difference between hours and days and between fitting or not in 24 GiB for
the 6M articles of English Wikipedia; the lead is also where an article says what it is about.

Doc store. SQLite, one row per page (``page_id`` is the primary key) with the HTML compressed
by zstd (through pyarrow, no extra dependency): a fetch is one B-tree lookup, whereas a parquet
row group would have to be decompressed whole for a single article. Documents in the BM25 index
are ordered by page id, so ties are broken by page id without any lookup.

Cache. Both live under ``cache_dir/{fingerprint}/{wiki}/``, where the fingerprint hashes the
resolved input paths, their sizes and mtimes, the ``wiki=`` argument and ``FORMAT_VERSION``;
a rerun memory-maps the saved index instead of rebuilding. A build writes into a temporary
folder renamed into place only when complete, so an interrupted build never leaves an index
that loads; leftovers of killed builds are removed by the next build.

One revision per page: a snapshot is one point in time, so when the inputs hold several
revisions of a page the highest revision id is kept (the first file, in path order, on a tie).

Retrieval time: an article's ``retrieved_at`` is its record's ``date_modified`` when present,
else the snapshot file's mtime — for a snapshot, the time of retrieval is the snapshot's time.
"""

from __future__ import annotations

import gzip
import hashlib
import html as html_lib
import json
import os
import re
import secrets
import shutil
import sqlite3
import tarfile
import time
import zlib
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from threading import Lock
from typing import Any

import bm25s
import lxml.etree
import lxml.html
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from m4build.errors import InputFileError, UsageError
from m4build.records import Article, FetchFailure, PageHit, PageRef
from m4build.sources.wikipedia.base import SourceStats
from m4build.text.tokenize import tokenize
from m4build.wikis import article_url, dbname

FORMAT_VERSION = 2
"""Bump when the tokenizer, the indexed text or the cache layout changes: old caches then miss."""

LEAD_CHARS = 4000
"""At most this much lead text is indexed per article (a long lead, or a plain-text article
without headings, would otherwise cost index memory for little gain)."""

ARTICLE_SCHEMA = pa.schema(
    [
        pa.field("wiki", pa.string(), nullable=False),
        pa.field("page_id", pa.int64(), nullable=False),
        pa.field("revision_id", pa.int64(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("url", pa.string(), nullable=False),
        pa.field("wikidata_id", pa.string()),
        pa.field("date_modified", pa.string()),  # ISO 8601, UTC
        pa.field("html", pa.string(), nullable=False),
    ]
)
"""Our parquet of articles: one row per page revision, HTML as Wikipedia rendered it."""

_OUR_COLUMNS = {"wiki", "page_id", "revision_id", "title", "html"}
_HF_COLUMNS = {"id", "title", "text"}
_SUFFIXES = (".ndjson", ".ndjson.gz", ".json", ".tar.gz", ".tgz", ".parquet")
_MANIFEST = "manifest.json"
_HTML_CODEC = pa.Codec("zstd", compression_level=3)
_SQL_BATCH = 500  # below SQLite's limit on bound parameters
_PARQUET_BATCH = 256  # rows; bounds memory to a few hundred articles' HTML

_WIKI_NAME = re.compile(r"[a-z][a-z0-9_]*wiki")
_WIKI_IN_NAME = re.compile(r"(?<![a-z0-9_])([a-z][a-z0-9_]*wiki)(?![a-z])")
_HF_FOLDER = re.compile(r"\d{8}\.([a-z][a-z0-9-]*)")
_FIRST_H2 = re.compile(rb"<h2[\s>]", re.IGNORECASE)
_CONTENT_START = re.compile(rb"""class=["'][^"']*\bmw-parser-output\b""")
_HTML_PARSER = lxml.html.HTMLParser(encoding="utf-8")

Progress = Callable[[int], None]
"""Called with the number of input records read so far."""


def default_cache_dir() -> Path:
    """Where snapshot indexes go when no ``cache_dir`` is given: ``$XDG_CACHE_HOME/m4build/snapshots``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "m4build" / "snapshots"


@dataclass(frozen=True)
class _Record:
    """One article revision as read from any input format."""

    wiki: str
    page_id: int
    revision_id: int
    title: str
    url: str
    wikidata_id: str | None
    date_modified: str | None
    html: str
    lead: str | None = None
    """The lead's text where the input has it without HTML to parse (plain text); else cut from ``html``."""


# --- reading the inputs -------------------------------------------------------------------


def _field(obj: Any, dotted: str, kind: type, *, required: bool = True) -> Any:
    """``obj["a"]["b"]`` for ``"a.b"``, type-checked; raises ValueError saying what is wrong."""
    value = obj
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    if value is None:
        if required:
            raise ValueError(f"field {dotted!r} is missing")
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"field {dotted!r} is a {type(value).__name__}, expected {kind.__name__}")
    return value


def _checked_wiki(wiki: str) -> str:
    """Wiki names become folder names in the cache, so only database names are accepted."""
    if not _WIKI_NAME.fullmatch(wiki):
        raise ValueError(f"{wiki!r} is not a Wikipedia database name such as 'enwiki'")
    return wiki


def _checked_ids(page_id: int, revision_id: int) -> None:
    if page_id <= 0:
        raise ValueError(f"page id {page_id} is not positive")
    if revision_id < 0:
        raise ValueError(f"revision id {revision_id} is negative")


def _iso(value: Any) -> str | None:
    """ISO 8601 UTC text for a timestamp given as text or as a datetime (parquet timestamps)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    raise ValueError(f"date_modified is a {type(value).__name__}, expected text or a timestamp")


def _enterprise_record(obj: Any) -> _Record | None:
    """A Wikimedia Enterprise article record; None for pages outside the main namespace."""
    if not isinstance(obj, dict):
        raise ValueError(f"the record is a JSON {type(obj).__name__}, expected an object")
    if _field(obj, "namespace.identifier", int, required=False) not in (None, 0):
        return None
    wiki = _checked_wiki(_field(obj, "is_part_of.identifier", str))
    title = _field(obj, "name", str)
    page_id = _field(obj, "identifier", int)
    revision_id = _field(obj, "version.identifier", int)
    _checked_ids(page_id, revision_id)
    return _Record(
        wiki=wiki,
        page_id=page_id,
        revision_id=revision_id,
        title=title,
        url=_field(obj, "url", str, required=False) or article_url(wiki, title),
        wikidata_id=_field(obj, "main_entity.identifier", str, required=False),
        date_modified=_field(obj, "date_modified", str, required=False),
        html=_field(obj, "article_body.html", str),
    )


def _ndjson_records(lines: Iterable[bytes], where: str) -> Iterator[_Record | None]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield _enterprise_record(json.loads(line))
        except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise InputFileError(
                f"{where}, line {number}: malformed Wikimedia Enterprise record: {exc}",
                "Each line must be one complete JSON article record; re-download or repair the file.",
            ) from exc


def _json_records(path: Path) -> Iterator[_Record | None]:
    try:
        obj = json.loads(path.read_bytes())
    except ValueError as exc:
        line = f", line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise InputFileError(
            f"{path}{line}: not valid JSON: {exc}", "A .json input holds one record."
        ) from exc
    try:
        yield _enterprise_record(obj)
    except ValueError as exc:
        raise InputFileError(f"{path}: malformed Wikimedia Enterprise record: {exc}") from exc


def _tar_records(path: Path) -> Iterator[_Record | None]:
    """Members are read in archive order as a stream: a dump chunk is never extracted to disk."""
    with tarfile.open(path, mode="r|gz") as archive:
        for member in archive:
            if member.isfile() and member.name.endswith(".ndjson"):
                stream = archive.extractfile(member)
                if stream is not None:
                    yield from _ndjson_records(stream, f"{path} [member {member.name}]")


def _wiki_from_path(path: Path) -> str | None:
    for part in (path.name, *(parent.name for parent in path.parents)):
        if match := _HF_FOLDER.fullmatch(part):
            return dbname(match[1])
        if match := _WIKI_IN_NAME.search(part):
            return match[1]
    return None


def _plain_text_article(text: str) -> tuple[str, str]:
    """HTML for a plain-text article (each non-blank line a ``<p>``), and its lead.

    That HTML has no headings, so its lead is every paragraph up to ``LEAD_CHARS``: joined from the
    lines directly, it is the text ``_lead_text`` would parse back out of the HTML. Measured on
    100k synthetic wikimedia/wikipedia rows, the parse cost 183 of the 919 us each article took in
    the streaming pass; this costs ~2 us.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    html = "".join(f"<p>{html_lib.escape(line)}</p>" for line in lines)
    return html, " ".join(lines)[:LEAD_CHARS]


def _our_row(row: dict[str, Any]) -> _Record:
    wiki = _checked_wiki(_field(row, "wiki", str))
    title = _field(row, "title", str)
    page_id, revision_id = _field(row, "page_id", int), _field(row, "revision_id", int)
    _checked_ids(page_id, revision_id)
    return _Record(
        wiki=wiki,
        page_id=page_id,
        revision_id=revision_id,
        title=title,
        url=_field(row, "url", str, required=False) or article_url(wiki, title),
        wikidata_id=_field(row, "wikidata_id", str, required=False),
        date_modified=_iso(row.get("date_modified")),
        html=_field(row, "html", str),
    )


def _hf_row(row: dict[str, Any], wiki: str) -> _Record:
    """A wikimedia/wikipedia row, whose ``id`` (the page id) is stored as text."""
    page_id = row.get("id")
    if isinstance(page_id, str) and page_id.isdigit():
        page_id = int(page_id)
    if not isinstance(page_id, int) or isinstance(page_id, bool):
        raise ValueError(f"field 'id' is {page_id!r}, expected a page id")
    _checked_ids(page_id, 0)
    title = _field(row, "title", str)
    html, lead = _plain_text_article(_field(row, "text", str))
    return _Record(
        wiki=wiki,
        page_id=page_id,
        revision_id=0,
        title=title,
        url=_field(row, "url", str, required=False) or article_url(wiki, title),
        wikidata_id=None,
        date_modified=None,
        html=html,
        lead=lead,
    )


def _parquet_records(path: Path, wiki: str | None) -> Iterator[_Record]:
    parquet = pq.ParquetFile(path)
    names = set(parquet.schema_arrow.names)
    if _OUR_COLUMNS <= names:
        convert: Callable[[dict[str, Any]], _Record] = _our_row
    elif _HF_COLUMNS <= names:
        hf_wiki = wiki or _wiki_from_path(path)
        if hf_wiki is None:
            raise InputFileError(
                f"{path}: a wikimedia/wikipedia parquet does not say which wiki it holds",
                "Pass the wiki (e.g. wiki='enwiki'), or keep the dataset's folder name (e.g. '20231101.en').",
            )
        convert = partial(_hf_row, wiki=hf_wiki)
    else:
        raise InputFileError(
            f"{path}: not a parquet of articles (columns: {', '.join(sorted(names))})",
            f"Expected our columns {sorted(_OUR_COLUMNS)} or the wikimedia/wikipedia columns "
            f"{sorted(_HF_COLUMNS)}.",
        )
    number = 0
    # One row group at a time: a single iter_batches over the whole file holds on to every row
    # group it has read until it ends (pyarrow 26: 1.8 GB held at the end of a 1.9 GB file of 1M
    # articles; cf. apache/arrow#39808), so memory grew with the input; this way it stays ~130 MB.
    for group in range(parquet.num_row_groups):
        for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH, row_groups=[group]):
            for row in batch.to_pylist():
                number += 1
                try:
                    yield convert(row)
                except ValueError as exc:
                    raise InputFileError(f"{path}, row {number}: bad article row: {exc}") from exc


def _file_records(path: Path, wiki: str | None) -> Iterator[_Record | None]:
    name = path.name
    if name.endswith(".ndjson"):
        with path.open("rb") as lines:
            yield from _ndjson_records(lines, str(path))
    elif name.endswith(".ndjson.gz"):
        with gzip.open(path, "rb") as lines:
            yield from _ndjson_records(lines, str(path))
    elif name.endswith((".tar.gz", ".tgz")):
        yield from _tar_records(path)
    elif name.endswith(".json"):
        yield from _json_records(path)
    else:
        yield from _parquet_records(path, wiki)


def _read(path: Path, wiki: str | None) -> Iterator[_Record | None]:
    """Records of one input file; a file that cannot be read gets an error naming it."""
    try:
        yield from _file_records(path, wiki)
    except (OSError, EOFError, zlib.error, tarfile.TarError, pa.ArrowException) as exc:
        raise InputFileError(
            f"cannot read {path}: {exc}", "Check that the file is complete (re-download it) and readable."
        ) from exc


def _input_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Input files, folders expanded, resolved and sorted so that the order never matters."""
    files: set[Path] = set()
    for given in paths:
        path = Path(given).expanduser().resolve()
        if path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file() and p.name.endswith(_SUFFIXES))
        elif not path.exists():
            raise InputFileError(f"no such snapshot file: {path}")
        elif not path.name.endswith(_SUFFIXES):
            raise InputFileError(f"{path}: unknown snapshot format", f"Supported: {', '.join(_SUFFIXES)}.")
        else:
            files.add(path)
    if not files:
        raise InputFileError(
            "no snapshot files found", f"Give files or folders holding {', '.join(_SUFFIXES)}."
        )
    return sorted(files)


# --- what is indexed ----------------------------------------------------------------------


def _lead_text(html: str) -> str:
    """The text of the paragraphs before the first ``<h2>`` of the article body.

    Only the HTML before that heading is parsed, which is what makes indexing cheap. Skin chrome
    of saved full pages is skipped by starting at the ``mw-parser-output`` container.
    """
    data = html.encode("utf-8")
    start = _CONTENT_START.search(data)
    heading = _FIRST_H2.search(data, start.start() if start else 0)
    head = data[: heading.start()] if heading else data
    if not head.strip():
        return ""
    try:
        root = lxml.html.fromstring(head, parser=_HTML_PARSER)
    except lxml.etree.ParserError:  # nothing but comments or markup
        return ""
    containers = root.find_class("mw-parser-output")
    body = containers[0] if containers else root
    lxml.etree.strip_elements(body, "style", "script", with_tail=False)
    for reference in body.find_class("reference"):
        reference.drop_tree()
    return " ".join(paragraph.text_content() for paragraph in body.iter("p"))[:LEAD_CHARS]


def index_text(title: str, html: str) -> str:
    """What BM25 sees of an article: its title and its lead."""
    return f"{title}\n{_lead_text(html)}"


# --- building -----------------------------------------------------------------------------


def _iso_mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fingerprint(files: Sequence[Path], wiki: str | None) -> str:
    inputs = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    blob = json.dumps({"format": FORMAT_VERSION, "wiki": wiki, "inputs": inputs}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class _WikiBuilder:
    """Collects one wiki's articles: HTML straight to SQLite, token ids in memory, then BM25."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.folder = folder
        # A missing token gets the next id: ids are assigned in C, see ``add``.
        self.vocab: defaultdict[str, int] = defaultdict()
        self.vocab.default_factory = self.vocab.__len__
        self.docs: dict[int, tuple[int, array[int]]] = {}  # page id -> (revision id, token ids)
        self.db = sqlite3.connect(folder / "docs.sqlite")
        # The folder is renamed into place only when complete, so durability here buys nothing.
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE articles (page_id INTEGER PRIMARY KEY, revision_id INTEGER NOT NULL,"
            " title TEXT NOT NULL, url TEXT NOT NULL, wikidata_id TEXT, retrieved_at TEXT NOT NULL,"
            " html_size INTEGER NOT NULL, html_zstd BLOB NOT NULL);"
        )

    def add(self, record: _Record, retrieved_at: str) -> bool:
        """Adds the record unless a revision at least as new is already held; says whether it did."""
        held = self.docs.get(record.page_id)
        if held is not None and held[0] >= record.revision_id:
            return False
        html = record.html.encode("utf-8")
        self.db.execute(
            "INSERT OR REPLACE INTO articles VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.page_id,
                record.revision_id,
                record.title,
                record.url,
                record.wikidata_id,
                retrieved_at,
                len(html),
                _HTML_CODEC.compress(html, asbytes=True),
            ),
        )
        if record.lead is None:
            text = index_text(record.title, record.html)
        else:  # the same text, without parsing HTML (see _plain_text_article)
            text = f"{record.title}\n{record.lead}"
        ids = array("i", map(self.vocab.__getitem__, tokenize(text)))
        self.docs[record.page_id] = (record.revision_id, ids)
        return True

    def finish(self) -> int:
        """Writes the BM25 index (documents in page-id order) and closes the store; returns the count."""
        self.db.commit()
        self.db.close()
        page_ids = sorted(self.docs)
        # scipy's CSC construction needs ~45% less peak memory than bm25s' numpy one (measured:
        # 24M postings, +470 MB instead of +840 MB) and is faster: it bounds the largest builds.
        retriever = bm25s.BM25(csc_backend="scipy")
        corpus = [self.docs[p][1] for p in page_ids]
        self.docs.clear()  # only the token arrays are needed now; frees ~200 bytes per article
        self.vocab.default_factory = None  # a plain mapping from here on: no id handed out by accident
        retriever.index((corpus, self.vocab), show_progress=False)
        retriever.save(self.folder / "bm25", show_progress=False)
        np.save(self.folder / "page_ids.npy", np.asarray(page_ids, dtype=np.int64))
        return len(page_ids)

    def abort(self) -> None:
        self.db.close()


def _build(
    files: Sequence[Path], wiki: str | None, folder: Path, stats: SourceStats, progress: Progress | None
) -> None:
    """One pass over every input, then one index per wiki, then the manifest (written last)."""
    started = time.monotonic()
    folder.mkdir(parents=True)
    builders: dict[str, _WikiBuilder] = {}
    counts = {"records": 0, "skipped_non_article": 0, "duplicate_pages": 0}
    try:
        for path in files:
            mtime = _iso_mtime(path)
            for record in _read(path, wiki):
                counts["records"] += 1
                if record is None:
                    counts["skipped_non_article"] += 1
                else:
                    builder = builders.get(record.wiki)
                    if builder is None:
                        builder = builders[record.wiki] = _WikiBuilder(folder / record.wiki)
                    if not builder.add(record, record.date_modified or mtime):
                        counts["duplicate_pages"] += 1
                if progress is not None:
                    progress(counts["records"])
        articles = {name: builders[name].finish() for name in sorted(builders)}
    except BaseException:
        for builder in builders.values():
            builder.abort()
        raise
    for key, value in counts.items():
        stats.update(key, value)
    manifest = {
        "format": FORMAT_VERSION,
        "inputs": [
            {"path": str(f), "bytes": f.stat().st_size, "mtime_ns": f.stat().st_mtime_ns} for f in files
        ],
        "wiki_argument": wiki,
        "wikis": articles,
        **counts,
        "indexed_text": f"title + lead (paragraphs before the first h2, at most {LEAD_CHARS} characters)",
        "bm25s": bm25s.__version__,
        "build_seconds": round(time.monotonic() - started, 3),
    }
    (folder / _MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _remove_dead_builds(cache_dir: Path, fingerprint: str) -> None:
    """Temporary folders of builds whose process is gone (killed) are garbage: remove them."""
    for leftover in cache_dir.glob(f"{fingerprint}.tmp-*"):
        pid = leftover.name.split(".tmp-", 1)[1].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


def _built_folder(
    files: Sequence[Path], wiki: str | None, cache_dir: Path, stats: SourceStats, progress: Progress | None
) -> tuple[Path, bool]:
    """The complete index folder for these inputs, built if needed; and whether it was cached."""
    fingerprint = _fingerprint(files, wiki)
    final = cache_dir / fingerprint
    if (final / _MANIFEST).is_file():
        return final, True
    cache_dir.mkdir(parents=True, exist_ok=True)
    _remove_dead_builds(cache_dir, fingerprint)
    if final.exists():  # without a manifest: not made by a build (renames are atomic); unusable
        shutil.rmtree(final)
    temporary = cache_dir / f"{fingerprint}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        _build(files, wiki, temporary, stats, progress)
        temporary.rename(final)
    except OSError:
        if not (final / _MANIFEST).is_file():  # not a concurrent build that finished first
            raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return final, False


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
    one streaming pass (see the module docstring). ``wiki`` names the wiki of inputs whose records
    do not say it (the wikimedia/wikipedia parquet); ``progress`` is called with the number of
    records read during a build.
    """

    name = "snapshot"

    def __init__(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        cache_dir: str | os.PathLike[str] | None = None,
        *,
        wiki: str | None = None,
        progress: Progress | None = None,
    ) -> None:
        if wiki is not None and not _WIKI_NAME.fullmatch(wiki):
            raise UsageError(
                f"{wiki!r} is not a Wikipedia database name", "Name a wiki like 'enwiki' or 'zh_yuewiki'."
            )
        self.stats = SourceStats()
        files = _input_files(_paths(paths))
        folder, cached = _built_folder(
            files,
            wiki,
            Path(cache_dir) if cache_dir is not None else default_cache_dir(),
            self.stats,
            progress,
        )
        self.cache_path = folder
        self.manifest: dict[str, Any] = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
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
            html = _HTML_CODEC.decompress(blob, decompressed_size=size, asbytes=True).decode("utf-8")
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
    "SnapshotSource",
    "default_cache_dir",
    "index_text",
]
