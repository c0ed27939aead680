"""What a Wikipedia snapshot is read from, and what of each article BM25 indexes.

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

Indexed text: the title plus the lead (the paragraphs before the first ``<h2>``, at most
``LEAD_CHARS`` characters). Measured on the 44 real fixture pages (9.8 MB of HTML): title + full
text took 1.9 s (0.5 s HTML parsing, 1.4 s tokenising; 2,372 distinct terms per article), title
+ lead 0.06 s (the HTML is cut at the first ``<h2>`` before it is parsed; 118 distinct terms per
article). That is 30x faster and a 20x smaller index, the difference between hours and days for
the 6M articles of English Wikipedia; the lead is also where an article says what it is about.

Retrieval time: an article's ``retrieved_at`` is its record's ``date_modified`` when present,
else the snapshot file's mtime — for a snapshot, the time of retrieval is the snapshot's time.
"""

from __future__ import annotations

import gzip
import html as html_lib
import json
import os
import re
import tarfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html
import pyarrow as pa
import pyarrow.parquet as pq

from m4build.errors import InputFileError
from m4build.wikis import article_url, dbname

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
_PARQUET_BATCH = 256  # rows; bounds memory to a few hundred articles' HTML

WIKI_NAME = re.compile(r"[a-z][a-z0-9_]*wiki")
"""What a wiki's database name looks like (they become folder names in the cache)."""
_WIKI_IN_NAME = re.compile(r"(?<![a-z0-9_])([a-z][a-z0-9_]*wiki)(?![a-z])")
_HF_FOLDER = re.compile(r"\d{8}\.([a-z][a-z0-9-]*)")
_FIRST_H2 = re.compile(rb"<h2[\s>]", re.IGNORECASE)
_CONTENT_START = re.compile(rb"""class=["'][^"']*\bmw-parser-output\b""")
_HTML_PARSER = lxml.html.HTMLParser(encoding="utf-8")


@dataclass(frozen=True)
class SnapshotRecord:
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
    if not WIKI_NAME.fullmatch(wiki):
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


def _enterprise_record(obj: Any) -> SnapshotRecord | None:
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
    return SnapshotRecord(
        wiki=wiki,
        page_id=page_id,
        revision_id=revision_id,
        title=title,
        url=_field(obj, "url", str, required=False) or article_url(wiki, title),
        wikidata_id=_field(obj, "main_entity.identifier", str, required=False),
        date_modified=_field(obj, "date_modified", str, required=False),
        html=_field(obj, "article_body.html", str),
    )


def _ndjson_records(lines: Iterable[bytes], where: str) -> Iterator[SnapshotRecord | None]:
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


def _json_records(path: Path) -> Iterator[SnapshotRecord | None]:
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


def _tar_records(path: Path) -> Iterator[SnapshotRecord | None]:
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


def _our_row(row: dict[str, Any]) -> SnapshotRecord:
    wiki = _checked_wiki(_field(row, "wiki", str))
    title = _field(row, "title", str)
    page_id, revision_id = _field(row, "page_id", int), _field(row, "revision_id", int)
    _checked_ids(page_id, revision_id)
    return SnapshotRecord(
        wiki=wiki,
        page_id=page_id,
        revision_id=revision_id,
        title=title,
        url=_field(row, "url", str, required=False) or article_url(wiki, title),
        wikidata_id=_field(row, "wikidata_id", str, required=False),
        date_modified=_iso(row.get("date_modified")),
        html=_field(row, "html", str),
    )


def _hf_row(row: dict[str, Any], wiki: str) -> SnapshotRecord:
    """A wikimedia/wikipedia row, whose ``id`` (the page id) is stored as text."""
    page_id = row.get("id")
    if isinstance(page_id, str) and page_id.isdigit():
        page_id = int(page_id)
    if not isinstance(page_id, int) or isinstance(page_id, bool):
        raise ValueError(f"field 'id' is {page_id!r}, expected a page id")
    _checked_ids(page_id, 0)
    title = _field(row, "title", str)
    html, lead = _plain_text_article(_field(row, "text", str))
    return SnapshotRecord(
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


def _parquet_records(path: Path, wiki: str | None) -> Iterator[SnapshotRecord]:
    parquet = pq.ParquetFile(path)
    names = set(parquet.schema_arrow.names)
    if _OUR_COLUMNS <= names:
        convert: Callable[[dict[str, Any]], SnapshotRecord] = _our_row
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


def _file_records(path: Path, wiki: str | None) -> Iterator[SnapshotRecord | None]:
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


def read_records(path: Path, wiki: str | None) -> Iterator[SnapshotRecord | None]:
    """Records of one input file; a file that cannot be read gets an error naming it."""
    try:
        yield from _file_records(path, wiki)
    except (OSError, EOFError, zlib.error, tarfile.TarError, pa.ArrowException) as exc:
        raise InputFileError(
            f"cannot read {path}: {exc}", "Check that the file is complete (re-download it) and readable."
        ) from exc


def input_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
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



def iso_mtime(path: Path) -> str:
    """A file's modification time as ISO 8601 UTC: the retrieval time of what a snapshot file holds."""
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
