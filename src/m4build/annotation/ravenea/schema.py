"""The RAVENEA annotation vocabulary: questions, answers, pair keys and the tables that hold labels.

RAVENEA's annotators judge every (image, article) pair on three binary questions (does the article
relate to the image's country, to its cultural content, to its visible elements?) and may answer
that a question cannot be determined. The ids below are the stable names every file uses: the
``from_name`` of Label Studio results, the CSV answer columns and the ``question`` column of the
import tables (``notes/ravenea_contract.md``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from m4build.metrics.checks import InputProblems

QUESTIONS: tuple[str, ...] = ("country", "cultural", "visual")
"""The three questions, in the order annotators see them."""

QUESTION_TEXT: Mapping[str, str] = {
    "country": "Is the article related to the country of the image?",
    "cultural": "Is the article related to the cultural content of the image?",
    "visual": "Does the article describe elements that are visible in the image?",
}

YES, NO, CANNOT_DETERMINE = "yes", "no", "cannot_determine"
ANSWERS: tuple[str, ...] = (YES, NO, CANNOT_DETERMINE)
"""The allowed answers, as stored. Each counts +1, -1 or 0 towards the culture-relevance grade."""

ANSWER_TEXT: Mapping[str, str] = {YES: "Yes", NO: "No", CANNOT_DETERMINE: "Cannot be determined"}
"""What annotators see; files may hold either this text or the stored id."""

ANSWER_POINTS: Mapping[str, int] = {YES: 1, NO: -1, CANNOT_DETERMINE: 0}

_ANSWER_SPELLINGS = {
    "yes": YES,
    "no": NO,
    "cannot determine": CANNOT_DETERMINE,
    "cannot be determined": CANNOT_DETERMINE,
}


def normalize_answer(raw: object) -> str | None:
    """The stored answer id for ``raw`` ("Yes", "Cannot be determined", "cannot_determine"...), or None.

    Only case, spacing, underscores and the displayed wording are forgiven; anything else ("maybe",
    "y", "1") is an answer outside the allowed set and must be reported, not guessed.
    """
    if not isinstance(raw, str):
        return None
    return _ANSWER_SPELLINGS.get(" ".join(raw.replace("_", " ").split()).lower())


def pair_key(file_name: str, enwiki_id: int) -> str:
    """The stable key of one (image, article) pair, embedded in every exported task and row.

    Imports join back on it alone, so annotators may reorder, filter or split the exported files.
    """
    return f"{file_name}#{enwiki_id}"


@dataclass(frozen=True)
class Pair:
    """One (image, article) candidate pair of the run, as ``candidates.parquet`` lists it."""

    file_name: str
    enwiki_id: int
    annotation_order: int

    @property
    def key(self) -> str:
        return pair_key(self.file_name, self.enwiki_id)


@dataclass(frozen=True)
class PairJudgment:
    """One annotator's answers to the three questions for one pair, and where they were read."""

    annotator: str
    pair: Pair
    answers: Mapping[str, str]  # question -> answer id, all three questions
    record: str  # locator inside the source file, e.g. "line 7" or "task 12, annotation 40"


@dataclass
class ParsedFile:
    """What one annotation file held: valid judgments, problems (by kind, with examples) and notes.

    Notes count what is normal but worth a line in the summary (tasks nobody annotated yet, skipped
    annotations); problems are records that cannot be imported as they are.
    """

    path: Path
    judgments: list[PairJudgment] = field(default_factory=list)
    problems: InputProblems = field(init=False)
    notes: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.problems = InputProblems(str(self.path))


LABEL_SCHEMA = pa.schema(
    [
        pa.field("annotator", pa.string(), nullable=False),
        pa.field("file_name", pa.string(), nullable=False),
        pa.field("enwiki_id", pa.int64(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("record", pa.string(), nullable=False),
        pa.field("imported_at", pa.string(), nullable=False),
    ]
)
"""``RUN/annotations/imports/<sha256>.parquet``: one row per answer (the contract's columns, plus
``imported_at``, which decides between two imports that disagree on the same annotator's answer)."""

JUDGMENT_SCHEMA = pa.schema(
    [
        pa.field("file_name", pa.string(), nullable=False),
        pa.field("enwiki_id", pa.int64(), nullable=False),
        *(pa.field(question, pa.string(), nullable=False) for question in QUESTIONS),
        pa.field("culture_relevance", pa.int8(), nullable=False),
        pa.field("annotator_count", pa.int32(), nullable=False),
        pa.field("tie", pa.bool_(), nullable=False),
        pa.field("tied_questions", pa.list_(pa.string()), nullable=False),
        pa.field("annotators", pa.list_(pa.string()), nullable=False),
    ]
)
"""``RUN/annotations/judgments.parquet``: the resolved answer per question and the grade, per pair."""
