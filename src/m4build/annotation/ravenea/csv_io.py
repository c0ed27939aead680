"""Annotation sheets as CSV: one row per (image, article) pair, one answer column per question.

For annotators who work in a spreadsheet instead of Label Studio. Each annotator gets a file with
their id in the ``annotator`` column (they may overwrite it with their name; it must not be empty),
fills ``answer_country``, ``answer_cultural`` and ``answer_visual`` with yes / no / cannot_determine
(the displayed wording "Cannot be determined" and any letter case are accepted too) and sends the
file back. Rows are joined back on ``pair_key`` alone, so sorting or filtering the sheet is harmless;
rows left with all three answers empty count as not annotated yet. Problems name rows as a
spreadsheet numbers them (the header is row 1), which differs from text lines when cells hold line
breaks; a file that is not CSV at all is reported by text line.

Spreadsheet programs cut cells at about 32,000 characters (Excel's limit is 32,767), so article
text longer than ``TEXT_LIMIT`` is shortened with a marker; the ``url`` column links the full
article. Files are written as UTF-8 with a byte-order mark, which Excel needs to show non-Latin text.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path

from m4build.annotation.ravenea.pairs import AnnotationTask
from m4build.annotation.ravenea.schema import QUESTIONS, Pair, PairJudgment, ParsedFile, normalize_answer
from m4build.errors import InputFileError

TEXT_LIMIT = 32_000
TRUNCATED = " […] (article shortened for the spreadsheet; read the rest at the url)"
ANSWER_COLUMNS: Mapping[str, str] = {question: f"answer_{question}" for question in QUESTIONS}
REQUIRED_COLUMNS = ("pair_key", "annotator", *ANSWER_COLUMNS.values())
COLUMNS = (
    "pair_key", "file_name", "enwiki_id", "annotation_order", "image", "country", "category", "caption",
    "title", "url", "article", "annotator", *ANSWER_COLUMNS.values(), "comment",
)  # fmt: skip
SHEET_HINT = (
    "Fill the sheet written by `m4build annotate export ravenea RUN --format csv` and keep its header row."
)


def shortened(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text``, cut to fit a spreadsheet cell with a marker saying so."""
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATED)] + TRUNCATED


def sheet_text(tasks: Sequence[AnnotationTask], images: Sequence[str], annotator: str) -> str:
    """The CSV text of one annotator's sheet; ``images`` gives each task's image path or URL."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for task, image in zip(tasks, images, strict=True):
        writer.writerow(
            [
                task.pair.key, task.pair.file_name, task.pair.enwiki_id, task.pair.annotation_order, image,
                task.country, task.category, task.caption, task.title, task.url, shortened(task.text),
                annotator, *("" for _ in QUESTIONS), "",
            ]
        )  # fmt: skip
    return "\ufeff" + buffer.getvalue()


def read_sheet(path: Path, pairs: Mapping[str, Pair]) -> ParsedFile:
    """The pair judgments in a filled sheet, with every invalid row reported by its row number.

    A file that cannot be read as CSV, or lacks a required column, raises ``InputFileError``.
    """
    parsed = ParsedFile(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputFileError(f"{path} is not UTF-8 text ({error})", "Save the sheet as CSV UTF-8.") from error
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = reader.fieldnames
        if not header:
            raise InputFileError(f"{path} is empty", SHEET_HINT)
        missing = [column for column in REQUIRED_COLUMNS if column not in header]
        if missing:
            raise InputFileError(f"{path} lacks the column(s) {', '.join(missing)}", SHEET_HINT)
        for number, row in enumerate(reader, start=2):
            _read_row(row, f"row {number}", pairs, parsed)
    except csv.Error as error:
        raise InputFileError(
            f"{path} is not well-formed CSV (line {reader.line_num}: {error})", SHEET_HINT
        ) from error
    return parsed


def _read_row(
    row: dict[str | None, object], locator: str, pairs: Mapping[str, Pair], parsed: ParsedFile
) -> None:
    raw = {question: _cell(row.get(column)) for question, column in ANSWER_COLUMNS.items()}
    if not any(raw.values()):
        parsed.notes["rows without answers (not annotated yet)"] += 1
        return
    problems: list[tuple[str, str]] = []
    if None in row:
        problems.append(("rows with more cells than the header", locator))
    key = _cell(row.get("pair_key"))
    pair = pairs.get(key)
    if pair is None:
        problems.append(("unknown (image, article) pairs", f"{locator}: {key or '(empty pair_key)'}"))
    annotator = _cell(row.get("annotator"))
    if not annotator:
        problems.append(("rows without an annotator", locator))
    missing = [question for question in QUESTIONS if not raw[question]]
    if missing:
        problems.append(("rows with missing answers", f"{locator}: no {', '.join(missing)}"))
    answers: dict[str, str] = {}
    for question, value in raw.items():
        answer = normalize_answer(value) if value else None
        if answer is not None:
            answers[question] = answer
        elif value:
            problems.append(("answers outside yes/no/cannot_determine", f"{locator}: {question} = {value!r}"))
    for kind, example in problems:
        parsed.problems.add(kind, example)
    if problems or pair is None:
        return
    parsed.judgments.append(PairJudgment(annotator=annotator, pair=pair, answers=answers, record=locator))


def _cell(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""
