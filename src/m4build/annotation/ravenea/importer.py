"""``m4build annotate import ravenea``: labels in, validated, kept per file, resolved, agreement measured.

Every file is validated on its own before anything is written. A file that cannot be read, or
(unless ``skip_invalid``) holds any invalid record, is not imported at all, so the user fixes it and
imports it again; a file that passes is written as its own parquet,
``RUN/annotations/imports/<sha256 of the file>.parquet``, atomically. Earlier imports are never
touched, and importing the same bytes again finds its parquet and does nothing.

Judgments and agreement are then recomputed from all imports of the run, in a fixed order:

- one annotator's repeated records in one file are merged when identical and reported when they
  conflict; across files, the answer from the later import stands (a Label Studio export made after
  an annotator corrected a label supersedes the earlier export), and the replacements are counted;
- labels of pairs the run no longer has (a rebuilt candidate list) are counted and left out;
- agreement (Cohen's κ per annotator pair, Fleiss' κ, Krippendorff's α) is measured per question
  and over all three questions together (units: (pair, question)); annotator pairs that agree no
  better than chance (κ ≤ 0) are named in ``warnings``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from m4build.annotation.ravenea import csv_io, label_studio
from m4build.annotation.ravenea.grades import ResolvedPair, judgments_table, resolve
from m4build.annotation.ravenea.pairs import read_pairs
from m4build.annotation.ravenea.schema import LABEL_SCHEMA, QUESTIONS, Pair, PairJudgment, ParsedFile
from m4build.errors import InputFileError, UsageError
from m4build.metrics.agreement import Agreement, agreement
from m4build.runs import atomic_write_json, atomic_write_parquet

READERS = {".json": label_studio.read_export, ".csv": csv_io.read_sheet}

IMPORTED, ALREADY_IMPORTED, NOTHING_TO_IMPORT, REJECTED, UNREADABLE = (
    "imported", "already imported", "nothing to import", "rejected", "unreadable",
)  # fmt: skip


def annotations_dir(run: Path) -> Path:
    return run / "annotations"


def imports_dir(run: Path) -> Path:
    return annotations_dir(run) / "imports"


@dataclass(frozen=True)
class FileOutcome:
    """What happened to one file given to the import."""

    path: Path
    sha256: str
    status: str  # one of IMPORTED, ALREADY_IMPORTED, NOTHING_TO_IMPORT, REJECTED, UNREADABLE
    judgments: int = 0  # pair judgments written (each holds three answers)
    parsed: ParsedFile | None = None  # None when the file was unreadable or already imported
    error: str | None = None  # why an unreadable file could not be read

    @property
    def failed(self) -> bool:
        return self.status in (REJECTED, UNREADABLE)


@dataclass(frozen=True)
class ImportReport:
    """The files' outcomes and what all imports of the run add up to."""

    files: tuple[FileOutcome, ...]
    labels: int = 0  # answers in force after merging all imports
    replaced: int = 0  # answers a later import changed
    orphaned: int = 0  # answers for pairs the run no longer has
    pairs: tuple[ResolvedPair, ...] = ()
    agreement: Mapping[str, Agreement] = field(default_factory=dict)  # "all" and each question
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[FileOutcome, ...]:
        return tuple(outcome for outcome in self.files if outcome.failed)

    @property
    def ties(self) -> int:
        return sum(bool(pair.tied_questions) for pair in self.pairs)

    @property
    def grade_counts(self) -> dict[int, int]:
        counts = Counter(pair.grade for pair in self.pairs)
        return {grade: counts[grade] for grade in range(-3, 4)}

    def agreement_json(self) -> dict[str, Any]:
        """The content of ``RUN/annotations/agreement.json``."""
        annotators = sorted({name for pair in self.pairs for name in pair.annotators})
        return {
            "annotators": annotators,
            "judged_pairs": len(self.pairs),
            "labels": self.labels,
            "labels_replaced_by_later_imports": self.replaced,
            "labels_for_pairs_not_in_run": self.orphaned,
            "tied_pairs": self.ties,
            "culture_relevance_counts": {str(grade): count for grade, count in self.grade_counts.items()},
            "agreement": {scope: result.as_dict() for scope, result in self.agreement.items()},
            "warnings": list(self.warnings),
        }


def import_annotations(run: Path, files: Sequence[Path], *, skip_invalid: bool = False) -> ImportReport:
    """Import ``files`` into ``run``, then rewrite its judgments and agreement from every import.

    ``skip_invalid`` imports the valid records of files that also hold invalid ones (still reported)
    instead of rejecting those files whole.
    """
    _check_files(files)
    pairs = read_pairs(run)
    outcomes = tuple(_import_file(run, path, pairs, skip_invalid=skip_invalid) for path in files)
    labels, replaced, orphaned = _labels_in_force(run, pairs)
    if not labels:
        return ImportReport(files=outcomes)
    resolved = resolve(labels)
    measured = _agreement(labels)
    report = ImportReport(
        files=outcomes,
        labels=len(labels),
        replaced=replaced,
        orphaned=orphaned,
        pairs=tuple(resolved),
        agreement=measured,
        warnings=tuple(_warnings(measured)),
    )
    atomic_write_parquet(annotations_dir(run) / "judgments.parquet", judgments_table(resolved))
    atomic_write_json(annotations_dir(run) / "agreement.json", report.agreement_json())
    return report


def _check_files(files: Sequence[Path]) -> None:
    if not files:
        raise UsageError(
            "no annotation files given", "Pass Label Studio JSON exports and/or filled CSV sheets."
        )
    for path in files:
        if not path.is_file():
            raise UsageError(f"{path} does not exist or is not a file", "Check the path and run again.")
        if path.suffix.lower() not in READERS:
            raise UsageError(
                f"{path}: cannot tell its format from the extension {path.suffix or '(none)'}",
                "Pass Label Studio JSON exports as .json and filled sheets as .csv.",
            )


def _import_file(run: Path, path: Path, pairs: Mapping[str, Pair], *, skip_invalid: bool) -> FileOutcome:
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    target = imports_dir(run) / f"{sha256}.parquet"
    if target.exists():
        return FileOutcome(path, sha256, ALREADY_IMPORTED)
    try:
        parsed = READERS[path.suffix.lower()](path, pairs)
    except InputFileError as error:
        return FileOutcome(path, sha256, UNREADABLE, error=str(error))
    judgments = _merge_repeats(parsed)
    if parsed.problems and not skip_invalid:
        return FileOutcome(path, sha256, REJECTED, parsed=parsed)
    if not judgments:
        return FileOutcome(path, sha256, NOTHING_TO_IMPORT, parsed=parsed)
    atomic_write_parquet(target, _label_table(judgments, path))
    return FileOutcome(path, sha256, IMPORTED, judgments=len(judgments), parsed=parsed)


def _merge_repeats(parsed: ParsedFile) -> list[PairJudgment]:
    """One judgment per annotator and pair: identical repeats merged, conflicting ones reported."""
    by_key: dict[tuple[str, str], list[PairJudgment]] = {}
    for judgment in parsed.judgments:
        by_key.setdefault((judgment.annotator, judgment.pair.key), []).append(judgment)
    kept = []
    for (annotator, key), repeats in by_key.items():
        if all(dict(judgment.answers) == dict(repeats[0].answers) for judgment in repeats):
            kept.append(repeats[0])
            if len(repeats) > 1:
                parsed.notes["identical repeated records (merged)"] += len(repeats) - 1
        else:
            where = " vs ".join(judgment.record for judgment in repeats)
            parsed.problems.add("conflicting answers from one annotator", f"{annotator} on {key}: {where}")
    return kept


def _label_table(judgments: Iterable[PairJudgment], path: Path) -> pa.Table:
    imported_at = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    rows = [
        {
            "annotator": judgment.annotator,
            "file_name": judgment.pair.file_name,
            "enwiki_id": judgment.pair.enwiki_id,
            "question": question,
            "answer": judgment.answers[question],
            "source_file": str(path),
            "record": judgment.record,
            "imported_at": imported_at,
        }
        for judgment in judgments
        for question in QUESTIONS
    ]
    return pa.Table.from_pylist(rows, schema=LABEL_SCHEMA)


def _labels_in_force(run: Path, pairs: Mapping[str, Pair]) -> tuple[list[dict[str, Any]], int, int]:
    """Every import's labels, the later import winning per (annotator, pair, question)."""
    folder = imports_dir(run)
    files = (
        sorted(p for p in folder.glob("*.parquet") if not p.name.startswith(".")) if folder.is_dir() else []
    )
    rows = []
    for path in files:
        rows.extend(dict(row, import_id=path.stem) for row in pq.read_table(path).to_pylist())
    rows.sort(key=lambda row: (row["imported_at"], row["import_id"], row["record"]))
    in_force: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    replaced = orphaned = 0
    known = {(pair.file_name, pair.enwiki_id) for pair in pairs.values()}
    for row in rows:
        if (row["file_name"], row["enwiki_id"]) not in known:
            orphaned += 1
            continue
        key = (row["annotator"], row["file_name"], row["enwiki_id"], row["question"])
        earlier = in_force.get(key)
        replaced += earlier is not None and earlier["answer"] != row["answer"]
        in_force[key] = row
    return [in_force[key] for key in sorted(in_force)], replaced, orphaned


def _agreement(labels: Sequence[Mapping[str, Any]]) -> dict[str, Agreement]:
    def units(question: str | None) -> list[tuple[tuple[str, int, str], str, str]]:
        return [
            ((row["file_name"], row["enwiki_id"], row["question"]), row["annotator"], row["answer"])
            for row in labels
            if question is None or row["question"] == question
        ]

    return {"all": agreement(units(None)), **{question: agreement(units(question)) for question in QUESTIONS}}


def _warnings(measured: Mapping[str, Agreement]) -> list[str]:
    """Plain-language warnings: too few annotators, and annotator pairs at or below chance."""
    overall = measured["all"]
    if len(overall.raters) < 2:
        return [f"only {len(overall.raters)} annotator: agreement needs at least two annotators per pair"]
    warnings = []
    if overall.pairable_units == 0:
        warnings.append("no pair was judged by two annotators: agreement cannot be measured")
    for scope, result in measured.items():
        what = "all questions" if scope == "all" else f"the {scope} question"
        for pair in result.pairs:
            if pair.shared_units == 0 or (pair.kappa is not None and pair.kappa > 0):
                continue
            counts = f"{pair.agreed_units} of {pair.shared_units} shared answers the same"
            if pair.kappa is None:
                warnings.append(
                    f"{pair.first} and {pair.second}: Cohen's kappa undefined on {what} ({counts})"
                )
            elif pair.agreed_units == 0:
                warnings.append(
                    f"{pair.first} and {pair.second} disagree on every shared answer on {what} "
                    f"(kappa {pair.kappa:.2f}, {counts})"
                )
            else:
                warnings.append(
                    f"{pair.first} and {pair.second} agree no better than chance on {what} "
                    f"(kappa {pair.kappa:.2f}, {counts})"
                )
    return warnings
