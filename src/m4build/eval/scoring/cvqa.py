"""Scoring CVQA multiple-choice predictions made elsewhere, per language–country subset and prompt language.

References
----------
CVQA (Romero et al., NeurIPS 2024; ``afaji/cvqa`` on the Hub) scores its test split on a hidden-label
leaderboard: the public rows carry ``Label = -1``, so no public scorer or prediction format exists to
reproduce, and scoring here needs a copy of the rows *with* labels. The paper reports accuracy per
(language, country) subset, with the question asked in English and in the local language.

M4-RAG (Anugraha et al., 2025; ``davidanugraha/M4-RAG``, ``src/evaluation/eval_cvqa.py``) scores CVQA
locally against ``davidanugraha/cvqa`` (CVQA with labels), and defines the prediction format read here:
a JSON array or JSONL of objects with ``ID`` (CVQA's ``ID`` plus ``-en`` for the English prompt, built
from ``Translated Question``/``Translated Options``, or ``-local`` for the local-language prompt) and
``response`` (the model's raw text, asked to be ``{"answer": N}``). It reads the answer with
``extract_answer_mcq`` (``json.loads(response).get("answer")`` as a string, else the first
``answer: N``), compares it as a *string* with ``str(Label + 1)``, scores every CVQA row in both prompt
languages with a missing response counted wrong, and reports accuracy by prompt type, by language
(``English`` for every ``-en`` item, the subset's language otherwise), by category, and overall (micro).

What this module computes
-------------------------
Both modes report accuracy per (prompt language, subset), per prompt language, per subset, per
category, the macro average (subsets within each prompt language, then prompt languages: the paper's
per-subset view) and the micro average (M4-RAG's "Overall"). Subsets are named ``Language-Country``
(``Spanish-Mexico``), since M4-RAG's by-language view merges subsets that share a language.

- ``default``: the response is read by :func:`m4build.metrics.score_choices`' corrected cascade
  against the options of the prompt language (``Translated Options`` for ``-en``, ``Options`` for
  ``-local``; an ID without either suffix is read for numbers only). Only the predictions given are
  scored; rows without a prediction are counted (``missing``), not scored, so a partial run can be
  scored per subset without every other subset dragging it down.
- ``parity``: M4-RAG's reading and denominator. The response is read as ``extract_answer_mcq`` reads
  it and compared as a string, so ``{"answer": 2.0}``, ``"02"`` or ``{"answer": "2. Tacos"}`` are
  wrong and a bare ``2`` (valid JSON, not an object) is unreadable; every row of the CVQA table is
  scored in both prompt languages, a missing response counting as wrong. The number read is handed to
  ``score_choices`` as a canonical decimal (anything else as an empty, unreadable answer), which makes
  its grading the same string comparison.

Refused in both modes (one ``MetricInputError`` naming the lines): an ``ID`` that is not in the CVQA
rows, two predictions for one ``ID``, a response that is not text, rows whose ``Label`` is hidden
(-1) and, in ``parity``, IDs without the ``-en``/``-local`` suffix M4-RAG's lookup needs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m4build.errors import InputFileError
from m4build.eval.scoring.inputs import (
    cell_integer,
    cell_text,
    checked_mode,
    collect_predictions,
    hub_dataset,
    is_hub_id,
    local_table_rows,
    prediction_files,
)
from m4build.eval.scoring.report import ChoiceReport
from m4build.metrics import ChoiceAccuracy, ChoiceRecord, InputProblems, score_choices
from m4build.sources.benchmarks import Row, dataset_rows, require_columns, string_list
from m4build.sources.cvqa import parse_subset

BENCHMARK = "cvqa"
CVQA_DATASET = "davidanugraha/cvqa"  # CVQA with its labels, as M4-RAG scores it; afaji/cvqa hides them
CVQA_SPLIT = "test"
HIDDEN_LABEL = -1
ROW_COLUMNS = ("ID", "Subset", "Options", "Translated Options", "Label")
ENGLISH, LOCAL, UNMARKED = "en", "local", "unmarked"
PROMPT_TYPE_NAMES = {ENGLISH: "English prompt", LOCAL: "Local-language prompt", UNMARKED: "Prompt not marked"}
_SUFFIXES = {f"-{ENGLISH}": ENGLISH, f"-{LOCAL}": LOCAL}
_TEXT_FIELDS = ("response", "prediction")  # M4-RAG writes `response`; `prediction` as WorldCuisines does
_M4RAG_ANSWER = re.compile(r'(?:"answer"|answer)\s*:\s*"?(\d+)"?')
_HINT = (
    "Give each prediction an ID from the CVQA rows with -en (English prompt) or -local (local-language "
    "prompt) appended, as M4-RAG does, and the model's raw text in `response`; score against CVQA rows "
    "that carry their labels (e.g. --cvqa davidanugraha/cvqa, or local files)."
)


@dataclass(frozen=True)
class CvqaRow:
    """One CVQA question with its labels, in both prompt languages."""

    cvqa_id: str
    subset: str  # "Language-Country"
    category: str | None
    options: tuple[str, ...]
    translated_options: tuple[str, ...]
    gold_option: int  # 1-based: Label + 1
    origin: str

    def options_for(self, variant: str) -> tuple[str, ...] | None:
        if variant == ENGLISH:
            return self.translated_options
        return self.options if variant == LOCAL else None


@dataclass(frozen=True)
class CvqaPrediction:
    item_id: str  # as written: "5919991144272485961_0-en"
    cvqa_id: str  # without the prompt-language suffix
    variant: str  # en, local or unmarked
    output: str
    origin: str


def split_id(item_id: str) -> tuple[str, str]:
    """``"123_0-en"`` -> ``("123_0", "en")``; an ID without a known suffix is ``unmarked``."""
    for suffix, variant in _SUFFIXES.items():
        if item_id.endswith(suffix) and len(item_id) > len(suffix):
            return item_id[: -len(suffix)], variant
    return item_id, UNMARKED


# --- reading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CvqaPredictionSet:
    predictions: tuple[CvqaPrediction, ...]
    files: tuple[Path, ...]


def read_predictions(paths: Sequence[Path]) -> CvqaPredictionSet:
    """M4-RAG-style prediction files: ``ID`` and ``response`` (or ``prediction``) per record."""
    files = prediction_files(paths)
    problems = InputProblems(f"{BENCHMARK} predictions")
    predictions: list[CvqaPrediction] = collect_predictions(files, _prediction, problems)
    first: dict[str, CvqaPrediction] = {}
    for prediction in predictions:
        earlier = first.setdefault(prediction.item_id, prediction)
        if earlier is not prediction:
            problems.add(
                "duplicate predictions for one ID",
                f"{prediction.item_id!r} at {earlier.origin} and {prediction.origin}",
            )
    problems.raise_if_any(_HINT)
    return CvqaPredictionSet(tuple(predictions), tuple(files))


def _prediction(row: Row, problems: InputProblems) -> CvqaPrediction | None:
    field = next((name for name in _TEXT_FIELDS if name in row.data), None)
    require_columns(row.data.keys(), ("ID", field or "response"), row.origin)
    item_id, output = cell_text(row.data["ID"]), row.data[field]
    if item_id is None:
        problems.add("records without an ID", row.origin)
    if not isinstance(output, str):
        problems.add(f"records whose {field} is missing or not text", row.origin)
    if item_id is None or not isinstance(output, str):
        return None
    cvqa_id, variant = split_id(item_id)
    return CvqaPrediction(item_id, cvqa_id, variant, output, row.origin)


def read_rows(sources: Sequence[str] | None = None, *, split: str = CVQA_SPLIT) -> dict[str, CvqaRow]:
    """CVQA rows with labels by ``ID``, from local JSONL/parquet/CSV files or a Hub dataset id."""
    rows: dict[str, CvqaRow] = {}
    for row in _table_rows(sources or [CVQA_DATASET], split):
        parsed = cvqa_row(row)
        earlier = rows.setdefault(parsed.cvqa_id, parsed)
        if earlier is not parsed:
            raise InputFileError(
                f"CVQA ID {parsed.cvqa_id!r} appears twice: {earlier.origin} and {parsed.origin}",
                "Pass each CVQA file once.",
            )
    if not rows:
        raise InputFileError(f"No CVQA rows in {', '.join(sources or [CVQA_DATASET])}.")
    return rows


def _table_rows(sources: Sequence[str], split: str) -> Iterator[Row]:
    yield from local_table_rows([source for source in sources if not is_hub_id(source)], "--cvqa")
    for dataset in (source for source in sources if is_hub_id(source)):
        loaded = hub_dataset(dataset, None, split, "--cvqa")
        yield from dataset_rows(loaded, f"{dataset} ({split})", ROW_COLUMNS, ("Category",))


def cvqa_row(row: Row) -> CvqaRow:
    """One CVQA row; a hidden label (-1, the public test split) is refused with the way out."""
    data = row.data
    require_columns(data.keys(), ROW_COLUMNS, row.origin)
    cvqa_id = cell_text(data["ID"])
    if cvqa_id is None:
        raise InputFileError(f"{row.origin}: empty ID")
    language, country = parse_subset(data["Subset"], row.origin)
    label = cell_integer(data["Label"])
    if label == HIDDEN_LABEL:
        raise InputFileError(
            f"{row.origin}: Label is -1: these CVQA rows hide their answers (as the public afaji/cvqa does).",
            f"Score against a copy with labels, e.g. --cvqa {CVQA_DATASET} (the one M4-RAG uses).",
        )
    options = tuple(string_list(data["Options"], "Options", row.origin))
    translated = tuple(string_list(data["Translated Options"], "Translated Options", row.origin))
    if label is None or not 0 <= label < len(options):
        raise InputFileError(
            f"{row.origin}: Label {data['Label']!r} is not an index into the {len(options)} Options"
        )
    category = cell_text(data.get("Category"))
    return CvqaRow(cvqa_id, f"{language}-{country}", category, options, translated, label + 1, row.origin)


# --- M4-RAG's reading (parity) -------------------------------------------------------------------


def m4rag_answer(response: str) -> str | None:
    """The answer string M4-RAG's ``extract_answer_mcq`` reads from a response, or None.

    JSON first: the ``answer`` field as ``str()`` gives it (``"None"`` when absent, ``"2.0"`` for a
    float); valid JSON that is not an object fails there and reads as nothing. Otherwise the first
    ``answer: N`` (quotes optional), normalised through ``int`` (leading zeros dropped; done on the
    digits, since ``int`` refuses runs over 4300 digits and the reference crashes there).
    """
    try:
        decoded = json.loads(response)
    except json.JSONDecodeError:
        match = _M4RAG_ANSWER.search(response)
        return (match.group(1).lstrip("0") or "0") if match else None
    if not isinstance(decoded, dict):
        return None
    return str(decoded.get("answer"))


def _parity_output(response: str | None) -> str:
    """What score_choices should read so that its grading equals M4-RAG's string comparison."""
    answer = m4rag_answer(response) if response is not None else None
    canonical = answer is not None and re.fullmatch(r"0|[1-9][0-9]*", answer) is not None
    return answer if canonical else ""


# --- scoring -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Joined:
    records: list[ChoiceRecord]
    missing: int


def _join(predictions: Sequence[CvqaPrediction], rows: Mapping[str, CvqaRow], mode: str) -> _Joined:
    problems = InputProblems(f"{BENCHMARK} predictions")
    by_item: dict[str, CvqaPrediction] = {}
    for prediction in predictions:
        if prediction.cvqa_id not in rows:
            problems.add(
                "predictions whose ID is not in the CVQA rows",
                f"{prediction.origin} ({prediction.item_id!r})",
            )
        elif mode == "parity" and prediction.variant == UNMARKED:
            problems.add("IDs without -en or -local (parity needs M4-RAG's IDs)", prediction.origin)
        else:
            by_item[prediction.item_id] = prediction
    problems.raise_if_any(_HINT)
    variants = (ENGLISH, LOCAL) if mode == "parity" else sorted({p.variant for p in by_item.values()})
    records, missing = [], 0
    for cvqa_id in sorted(rows):
        row = rows[cvqa_id]
        for variant in variants:
            item_id = cvqa_id if variant == UNMARKED else f"{cvqa_id}-{variant}"
            prediction = by_item.get(item_id)
            missing += prediction is None
            if prediction is None and mode != "parity":
                continue
            output = prediction.output if prediction else None
            records.append(
                ChoiceRecord(
                    item_id=item_id,
                    language=row.subset,
                    prompt_type=variant,
                    raw_output=_parity_output(output) if mode == "parity" else output,
                    gold_option=row.gold_option,
                    options=row.options_for(variant),
                )
            )
    return _Joined(records, missing)


def _by_category(accuracy: ChoiceAccuracy, rows: Mapping[str, CvqaRow]) -> dict[str, dict[str, Any]]:
    totals: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    for item in accuracy.items:
        category = rows[split_id(item.item_id)[0]].category or "(none)"
        totals[category] += 1
        correct[category] += item.correct
    return {
        category: {
            "n": totals[category],
            "correct": correct[category],
            "accuracy": correct[category] / totals[category],
        }
        for category in sorted(totals)
    }


def score_cvqa(
    predictions: CvqaPredictionSet,
    rows: Mapping[str, CvqaRow],
    *,
    mode: str = "default",
    inputs: Mapping[str, Any] | None = None,
) -> ChoiceReport:
    """Accuracy per prompt language and subset, per category, and the macro/micro averages (module notes)."""
    mode = checked_mode(mode)
    joined = _join(predictions.predictions, rows, mode)
    accuracy = score_choices(joined.records, mode="default")
    return ChoiceReport(
        benchmark=BENCHMARK,
        mode=mode,
        accuracy=accuracy,
        prompt_type_names=dict(PROMPT_TYPE_NAMES),
        inputs={"predictions": [str(path) for path in predictions.files], **(inputs or {})},
        details={
            "missing": joined.missing,
            "missing_scored_as_wrong": mode == "parity",
            "by_category": _by_category(accuracy, rows),
        },
        language_label="subset",
    )
