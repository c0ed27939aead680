"""TREC run files and graded relevance judgments, read strictly, and rankings built from scores.

Retrieval metrics are only as right as the order they read documents in. A run file carries both a
rank column and a score column, and peer scripts disagree on which one to trust: TREC's
``gdeval.pl`` and ``trec_eval`` sort by score (ties by document id, descending), while RAVENEA's
``src/gdeval.py`` (yfyuan01/RAVENEA) sorts by the rank column, which its ``src/inference.py``
wrote after a stable sort of scores over the candidates in the order the metadata stores them —
grade order. A retriever that gives every candidate the same score therefore hands RAVENEA's
script a perfect ranking. So ``rank_by_score`` orders by score and breaks ties by document id
(ascending, the convention of ``m4build.retrieval.fusion``, so a run is scored in the order our
searcher returned it), never by input order; ``rank_by_rank_column`` exists only for the parity
modes that reproduce a script reading the rank column.

Readers refuse malformed input instead of skipping it (RAVENEA's ``read_preds`` prints and skips
lines with fewer than four fields and crashes on four, five or more than six; its ``read_gt`` truncates
``enwiki_ids`` and ``culture_relevance`` lists of different lengths): every problem is collected
and reported once in a ``MetricInputError`` that names the file and the lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from m4build.errors import InputFileError, UsageError
from m4build.metrics.checks import InputProblems, is_missing_number

_RUN_FIELDS = 6
_QRELS_FIELDS = 4
_SHOWN_CHARS = 60  # how much of a bad line an error message quotes

RUN_HINT = (
    "Each line of a TREC run is `query Q0 document rank score tag`, separated by whitespace, "
    "with an integer rank, a numeric score and each document at most once per query."
)
QRELS_HINT = (
    "Each line of TREC qrels is `query iteration document grade` with an integer grade, "
    "each document judged at most once per query."
)
RAVENEA_HINT = (
    "Each line of RAVENEA metadata is a JSON object with `file_name` (the query), `enwiki_ids` "
    "(document ids) and `culture_relevance` (one integer grade per document, same length)."
)


@dataclass(frozen=True)
class RankedDoc:
    """One line of a run: a document retrieved for a query, with the file's score and rank."""

    doc_id: str
    score: float
    rank: int


Run = dict[str, tuple[RankedDoc, ...]]
"""Query id -> the documents retrieved for it, in file order."""

Judgments = dict[str, dict[str, int]]
"""Query id -> document id -> graded relevance."""


def rank_by_score(docs: Sequence[RankedDoc]) -> list[str]:
    """Document ids, higher score first, ties broken by lower document id (never by input order)."""
    return [doc.doc_id for doc in sorted(docs, key=lambda doc: (-doc.score, doc.doc_id))]


def rank_by_rank_column(docs: Sequence[RankedDoc]) -> list[str]:
    """Document ids by the file's rank column, ties kept in file order (parity modes only)."""
    return [doc.doc_id for doc in sorted(docs, key=lambda doc: doc.rank)]


def checked_depths(depths: Iterable[int]) -> tuple[int, ...]:
    """Cut-off depths for a ranking metric, sorted and deduplicated; only positive integers are accepted."""
    cutoffs = tuple(sorted(set(depths)))
    if not cutoffs or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in cutoffs):
        raise UsageError(
            f"Bad cut-off depths {cutoffs!r}.", "Give one or more positive integers, e.g. 1 5 10."
        )
    return cutoffs


def find_run_problems(run: Mapping[str, Sequence[RankedDoc]], problems: InputProblems) -> None:
    """Add to ``problems`` every query with an empty ranking, a repeated document or a missing score."""
    for query in sorted(run):
        docs = run[query]
        if not docs:
            problems.add("queries with an empty ranking", query)
        seen: set[str] = set()
        for doc in docs:
            if doc.doc_id in seen:
                problems.add("documents ranked twice for one query", f"{query}/{doc.doc_id}")
            seen.add(doc.doc_id)
            if is_missing_number(doc.score):
                problems.add("documents with a missing score", f"{query}/{doc.doc_id}")


def read_run(path: str | Path) -> Run:
    """A TREC run file (``query Q0 document rank score tag``), every line checked.

    The second column is not checked (runs in the wild write ``Q0``, ``0`` or ``q0``) and the tag
    is not kept. Blank lines are skipped.
    """
    path = Path(path)
    problems = InputProblems(f"run file {path}")
    entries: dict[str, list[RankedDoc]] = {}
    seen: set[tuple[str, str]] = set()
    for number, line in _lines(path):
        fields = line.split()
        if len(fields) != _RUN_FIELDS:
            problems.add(f"lines without {_RUN_FIELDS} fields", _quote(number, line))
            continue
        query, _, doc_id, rank_text, score_text, _ = fields
        rank, score = _integer(rank_text), _number(score_text)
        if rank is None:
            problems.add("lines whose rank is not an integer", _quote(number, line))
        if score is None:
            problems.add("lines whose score is not a number", _quote(number, line))
        if (query, doc_id) in seen:
            problems.add("documents ranked twice for one query", _quote(number, line))
        seen.add((query, doc_id))
        if rank is not None and score is not None:
            entries.setdefault(query, []).append(RankedDoc(doc_id, score, rank))
    if not entries and not problems:
        problems.add("files without a single ranking line", path)
    problems.raise_if_any(RUN_HINT)
    return {query: tuple(docs) for query, docs in entries.items()}


def read_qrels(path: str | Path) -> Judgments:
    """Graded judgments from RAVENEA metadata (``*.jsonl``) or from TREC qrels (any other name)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return read_ravenea_qrels(path)
    return read_trec_qrels(path)


def read_trec_qrels(path: str | Path) -> Judgments:
    """TREC qrels (``query iteration document grade``); the iteration column is not used."""
    path = Path(path)
    problems = InputProblems(f"qrels file {path}")
    judgments: Judgments = {}
    for number, line in _lines(path):
        fields = line.split()
        if len(fields) != _QRELS_FIELDS:
            problems.add(f"lines without {_QRELS_FIELDS} fields", _quote(number, line))
            continue
        query, _, doc_id, grade_text = fields
        grade = _integer(grade_text)
        if grade is None:
            problems.add("lines whose grade is not an integer", _quote(number, line))
            continue
        _judge(judgments, query, doc_id, grade, problems, _quote(number, line))
    if not judgments and not problems:
        problems.add("files without a single judgment", path)
    problems.raise_if_any(QRELS_HINT)
    return judgments


def read_ravenea_qrels(path: str | Path) -> Judgments:
    """RAVENEA metadata JSONL: ``file_name`` (query), aligned ``enwiki_ids`` and ``culture_relevance``.

    Grades must be integers (``2.0`` is read as 2); document ids may be strings or integers (read
    as their decimal string, the form a run file holds). A query on several lines gets the union of
    its judgments; a document judged twice for one query is an error, since the grade to keep is
    unknowable.
    """
    path = Path(path)
    problems = InputProblems(f"metadata file {path}")
    judgments: Judgments = {}
    for number, line in _lines(path):
        record = _json_object(line)
        if record is None:
            problems.add("lines that are not a JSON object", _quote(number, line))
            continue
        query, doc_ids, grades = (record.get(key) for key in ("file_name", "enwiki_ids", "culture_relevance"))
        if not isinstance(query, str) or not isinstance(doc_ids, list) or not isinstance(grades, list):
            problems.add("lines without file_name, enwiki_ids and culture_relevance", _quote(number, line))
            continue
        if len(doc_ids) != len(grades) or not doc_ids:
            problems.add("lines whose id and grade lists differ in length or are empty", _quote(number, line))
            continue
        for doc_value, grade_value in zip(doc_ids, grades):
            doc_id, grade = _doc_id(doc_value), _json_integer(grade_value)
            if doc_id is None or grade is None:
                problems.add("lines with a non-integer grade or a malformed id", _quote(number, line))
                break
            _judge(judgments, query, doc_id, grade, problems, _quote(number, line))
    if not judgments and not problems:
        problems.add("files without a single judgment", path)
    problems.raise_if_any(RAVENEA_HINT)
    return judgments


def _judge(
    judgments: Judgments, query: str, doc_id: str, grade: int, problems: InputProblems, where: str
) -> None:
    docs = judgments.setdefault(query, {})
    if doc_id in docs:
        problems.add("documents judged twice for one query", where)
        return
    docs[doc_id] = grade


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered non-blank lines of a UTF-8 text file; an unreadable file is one clear error."""
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield number, line.rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as error:
        raise InputFileError(
            f"Cannot read {path}: {error}", "Check the path, and that the file is UTF-8 text."
        ) from error


def _quote(number: int, line: str) -> str:
    shown = line.strip()
    if len(shown) > _SHOWN_CHARS:
        shown = shown[: _SHOWN_CHARS - 1] + "…"
    return f"line {number}: {shown!r}"


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _integer(text: str) -> int | None:
    value = _number(text)
    if value is None or not math.isfinite(value) or not value.is_integer():
        return None
    return int(value)


def _json_object(line: str) -> dict[str, object] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def _json_integer(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _doc_id(value: object) -> str | None:
    if isinstance(value, str) and value and not any(char.isspace() for char in value):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None
