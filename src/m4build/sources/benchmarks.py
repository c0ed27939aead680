"""Benchmark items for the M4-RAG corpora: one entry point over the WorldCuisines and CVQA loaders.

Both loaders read the same kinds of input (the Hugging Face Hub through ``datasets``, local
JSONL/parquet/CSV files, or the sample shipped in ``corpora/sample``) and must report the same kinds
of trouble, so the row readers, the schema check and the final sort/limit live here.

Items that cannot form queries (an empty question or answer, a label the dataset hides) are never
dropped silently: they come back in ``LoadedItems.skipped`` and are logged once with a count and
examples. Malformed input (a missing column, an unparsable cell) raises ``InputFileError`` naming
the file and row, because a half-read benchmark would give a corpus that only looks complete.
"""

from __future__ import annotations

import ast
import csv
import inspect
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m4build.errors import InputFileError, RemoteError, UsageError
from m4build.records import BenchmarkItem

logger = logging.getLogger(__name__)

BENCHMARKS = ("worldcuisines", "cvqa")
KEYWORD_SOURCES = ("hub", "sample")
TABLE_SUFFIXES = (".jsonl", ".parquet", ".csv")
MAX_LITERAL_CHARS = 10_000  # a stringified option list or subset tuple is far shorter than this

Source = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


@dataclass(frozen=True)
class Row:
    """One input record and where it came from, so that every error can point at it."""

    data: Mapping[str, Any]
    origin: str  # "path/file.jsonl:12", "path/file.csv row 3" or "afaji/cvqa (test) row 5"


@dataclass(frozen=True)
class SkippedItem:
    """A benchmark item that cannot form queries, kept so that the run can report it."""

    item_id: str
    lang: str  # "" when the row maps to no benchmark language (e.g. an unknown CVQA subset)
    reason: str  # short kind: "empty-question", "empty-answer", "hidden-label", "unknown-subset"
    detail: str = ""


class LoadedItems(list[BenchmarkItem]):
    """The loaded items (a plain list, sorted by item id) plus the items that were skipped.

    A list subclass so that callers that only want items can use the result as they would any list,
    while ``skipped`` and ``summary()`` stay at hand for the run manifest.
    """

    def __init__(self, items: Iterable[BenchmarkItem] = (), skipped: Iterable[SkippedItem] = ()):
        super().__init__(items)
        self.skipped: list[SkippedItem] = list(skipped)

    def summary(self, examples: int = 3) -> str:
        """One line: how many items, how many skipped and why, with a few example ids."""
        text = f"{len(self)} items"
        if not self.skipped:
            return text
        reasons = Counter(item.reason for item in self.skipped)
        kinds = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        shown = ", ".join(item.item_id for item in self.skipped[:examples])
        more = ", ..." if len(self.skipped) > examples else ""
        return f"{text}; {len(self.skipped)} skipped ({kinds}), e.g. {shown}{more}"


def load_items(
    benchmark: str,
    langs: Sequence[str],
    *,
    source: Source = "sample",
    limit_per_lang: int | None = None,
    options: Mapping[str, Any] | None = None,
    **kw: Any,
) -> LoadedItems:
    """Load the items of ``benchmark`` for the language codes ``langs``, sorted by item id.

    ``source`` is ``"hub"`` (``datasets.load_dataset`` on the benchmark's Hub ids), ``"sample"``
    (the copy shipped in ``corpora/sample``) or local files: a path, a directory of
    JSONL/parquet/CSV files, a comma-separated list of them, or a sequence of paths.
    ``options`` are the recipe's settings for this benchmark (``builders/m4rag.yaml``,
    ``benchmarks.<name>``); keyword arguments override them. ``limit_per_lang`` keeps the first N
    items (in item-id order) of each language. Skipped items are in ``result.skipped``.
    """
    if benchmark not in BENCHMARKS:
        raise UsageError(f"unknown benchmark {benchmark!r}", f"Valid benchmarks: {', '.join(BENCHMARKS)}.")
    loader = _loader(benchmark)
    settings = {**(options or {}), **kw}
    accepted = set(inspect.signature(loader).parameters) - {"langs", "source", "limit_per_lang"}
    unknown = sorted(set(settings) - accepted)
    if unknown:
        raise UsageError(
            f"unknown {benchmark} option(s): {', '.join(unknown)}",
            f"Valid options: {', '.join(sorted(accepted))}.",
        )
    result = loader(langs, source=source, limit_per_lang=limit_per_lang, **settings)
    if result.skipped:
        logger.warning("%s: %s", benchmark, result.summary())
    return result


def _loader(benchmark: str) -> Callable[..., LoadedItems]:
    # Imported here, not at the top: both loader modules import the shared readers from this one.
    if benchmark == "worldcuisines":
        from m4build.sources.worldcuisines import load_worldcuisines

        return load_worldcuisines
    from m4build.sources.cvqa import load_cvqa

    return load_cvqa


# --- sources -------------------------------------------------------------------------------------


def resolve_source(source: Source) -> str | list[Path]:
    """``"hub"`` or ``"sample"`` as they are, anything else as a list of existing local paths."""
    if isinstance(source, str) and source in KEYWORD_SOURCES:
        return source
    if isinstance(source, (str, os.PathLike)):
        given = os.fspath(source)
        parts = (
            [given] if Path(given).exists() else [part.strip() for part in given.split(",") if part.strip()]
        )
    else:
        parts = [os.fspath(part) for part in source]
    paths = [Path(part) for part in parts]
    missing = [str(path) for path in paths if not path.exists()]
    if not paths or missing:
        raise UsageError(
            f"no such input file: {', '.join(missing) or repr(source)}",
            f"Pass 'hub', 'sample', or existing {'/'.join(TABLE_SUFFIXES)} files or folders.",
        )
    return paths


def input_files(paths: Iterable[Path]) -> list[Path]:
    """Files in ``paths``, folders expanded to the table files inside them, in a stable order."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TABLE_SUFFIXES))
        else:
            files.append(path)
    return files


def load_hub_dataset(name: str, config: str | None = None, split: str | None = None) -> Any:
    """``datasets.load_dataset`` with a clear error when the Hub (or the dataset) cannot be reached."""
    from datasets import load_dataset

    try:
        return load_dataset(name, config, split=split)
    except (OSError, ValueError) as exc:  # ConnectionError and FileNotFoundError are OSErrors
        where = " ".join(part for part in (name, config, split and f"split={split}") if part)
        raise RemoteError(
            f"could not load {where} from the Hugging Face Hub: {exc}",
            "Check the dataset id and your connection, or use --items sample / local files.",
        ) from exc


def dataset_rows(dataset: Any, name: str, required: Sequence[str], kept: Sequence[str] = ()) -> Iterator[Row]:
    """Rows of a ``datasets.Dataset``, schema-checked, with only the text columns decoded.

    Selecting the columns first keeps ``datasets`` from decoding the (large) image column.
    """
    require_columns(dataset.column_names, required, name)
    wanted = [column for column in (*required, *kept) if column in dataset.column_names]
    for index, record in enumerate(dataset.select_columns(wanted)):
        yield Row(record, f"{name} row {index}")


# --- local files ---------------------------------------------------------------------------------


def read_table(path: Path) -> list[Row]:
    """Every record of a JSONL, CSV or parquet file, each tagged with its file and line."""
    readers = {".jsonl": _read_jsonl, ".csv": _read_csv, ".parquet": _read_parquet}
    reader = readers.get(path.suffix)
    if reader is None:
        raise InputFileError(f"{path}: unsupported file type", f"Use one of: {', '.join(TABLE_SUFFIXES)}.")
    try:
        return reader(path)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot be read ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: not UTF-8 text ({exc})") from exc


def _read_jsonl(path: Path) -> list[Row]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputFileError(
                    f"{path}:{number}: not valid JSON ({exc.msg})", "Each line must be one JSON object."
                ) from exc
            if not isinstance(record, dict):
                raise InputFileError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
            rows.append(Row(record, f"{path}:{number}"))
    return rows


def _read_csv(path: Path) -> list[Row]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        try:
            # Line 1 is the header, so record n sits on line n + 1 (for one-line records).
            return [Row(record, f"{path} row {number}") for number, record in enumerate(reader, start=2)]
        except csv.Error as exc:
            raise InputFileError(f"{path} line {reader.line_num}: malformed CSV ({exc})") from exc


def _read_parquet(path: Path) -> list[Row]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        records = pq.read_table(path).to_pylist()
    except pa.ArrowException as exc:
        raise InputFileError(f"{path}: not a readable parquet file ({exc})") from exc
    return [Row(record, f"{path} row {number}") for number, record in enumerate(records)]


# --- checks and parsing --------------------------------------------------------------------------


def require_columns(present: Collection[str], required: Sequence[str], where: str) -> None:
    """Refuse input that lacks a required column, naming the input and every missing column."""
    missing = [column for column in required if column not in present]
    if missing:
        raise InputFileError(
            f"{where} lacks column(s) {', '.join(repr(column) for column in missing)}",
            f"Expected at least: {', '.join(required)}.",
        )


def parse_literal(literal: str, what: str, origin: str) -> Any:
    """A Python literal written as text (CVQA's stringified tuples and lists), parsed safely.

    ``ast.literal_eval`` only builds literals: names, calls and attribute access are refused, so a
    cell such as ``__import__('os').system(...)`` is an error, never run. ``eval`` is never used.
    """
    if len(literal) > MAX_LITERAL_CHARS:
        raise InputFileError(f"{origin}: {what} is implausibly long ({len(literal)} characters)")
    try:
        return ast.literal_eval(literal.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise InputFileError(f"{origin}: {what} is not a plain literal: {literal[:80]!r}") from exc


def string_list(value: Any, what: str, origin: str) -> list[str]:
    """A list of strings given as a list (current CVQA) or as a stringified list (early CVQA)."""
    if isinstance(value, str):
        value = parse_literal(value, what, origin)
    if not isinstance(value, (list, tuple)) or not all(isinstance(part, str) for part in value):
        raise InputFileError(f"{origin}: {what} must be a list of strings, got {value!r:.80}")
    return [part.strip() for part in value]


def text(value: Any) -> str:
    """A cell as stripped text; missing cells (None) become empty."""
    return "" if value is None else str(value).strip()


def empty_reason(question: str, answer: str) -> str | None:
    """Why an item cannot form queries, or None when it can."""
    if not question:
        return "empty-question"
    if not answer:
        return "empty-answer"
    return None


def check_langs(langs: Sequence[str], valid: Collection[str], benchmark: str) -> None:
    """Refuse language codes the benchmark does not have, listing the ones it has."""
    unknown = [lang for lang in langs if lang not in valid]
    if unknown:
        raise UsageError(
            f"unknown {benchmark} language code(s): {', '.join(unknown)}",
            f"Valid codes: {', '.join(sorted(valid))}.",
        )


def finish(
    items: Iterable[BenchmarkItem],
    skipped: Iterable[SkippedItem],
    langs: Sequence[str],
    limit_per_lang: int | None,
) -> LoadedItems:
    """Keep the requested languages, sort by item id, apply the per-language limit.

    Skipped items of no language (``lang == ""``) are kept: they belong to every request.
    """
    wanted = set(langs)
    chosen = sorted((item for item in items if item.lang in wanted), key=lambda item: item.item_id)
    duplicates = sorted(item_id for item_id, n in Counter(item.item_id for item in chosen).items() if n > 1)
    if duplicates:
        raise InputFileError(
            f"item id(s) appear more than once in the input: {', '.join(duplicates[:5])}",
            "Pass each input file once (a folder already includes the files inside it).",
        )
    if limit_per_lang is not None:
        taken: Counter[str] = Counter()
        limited = []
        for item in chosen:
            if taken[item.lang] < limit_per_lang:
                taken[item.lang] += 1
                limited.append(item)
        chosen = limited
    kept = sorted((s for s in skipped if s.lang in wanted or not s.lang), key=lambda s: s.item_id)
    return LoadedItems(chosen, kept)
