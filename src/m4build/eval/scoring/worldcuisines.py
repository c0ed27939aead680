"""Scoring WorldCuisines multiple-choice predictions made elsewhere, in the benchmark's own file format.

Reference: WorldCuisines (Winata et al., 2024), ``worldcuisines/worldcuisines``:

- prediction files ``evaluation/result/task{1,2}_{mc,oe}_{model}_pred.jsonl`` (``..._pred_small.jsonl``
  for the small test set), one JSON object a line with ``qa_id``, ``prediction`` (the model's raw
  text), ``lang`` and ``multi_choice_answer`` (the 1-based number of the right option);
- ``evaluation/score/score.py`` (``load_result``, ``score_mc``) joins each prediction to its prompt
  type by ``qa_id`` through the VQA dataset (``world-cuisines/vqa``, configs ``task1``/``task2``),
  reads the option number with its four-step cascade (searching the ``multi_choice_prompt`` of the
  same ``qa_id`` and ``lang`` for answers given as option text), scores accuracy per (prompt type,
  language), and averages languages per prompt type and then prompt types (``avg_score_all``).

The cascade and the averages are :func:`m4build.metrics.score_choices` (``mode="parity"``
reproduces the scorer, including its flaws; the default corrects them, see
:mod:`m4build.metrics.choice`). This module does what ``score.py`` does around them, more strictly:

- it joins on ``qa_id`` *and* ``lang`` (the prompt text is per language), and a prediction whose
  pair is not in the VQA rows is an error, not a silent NaN prompt type that drops out of every group;
- the gold answer is the prediction file's ``multi_choice_answer`` (as in ``score.py``), and it must
  agree with the VQA row's: a mismatch means the VQA rows are another split or version than the one
  the model saw (the qa_id numbering differs between ``test_small`` and ``test_large``), and the
  prompt searched for option text would not be the one the model was shown;
- two predictions for one (``qa_id``, ``lang``) are an error (``score.py`` would count both);
- open-ended files (``task*_oe_*``) are refused: they are scored by string match and BERTScore,
  which this command does not do;
- files naming different models are refused, since one score of two models' answers means nothing.

VQA rows come from the repository's ``generate_vqa/generated_data/hf_prompt`` JSONL files (prompt
layout: ``multi_choice_prompt`` with the numbered options, ``multi_choice_answer``), from parquet/CSV
files in either layout, or from a Hub dataset such as ``worldcuisines/vqa-v1.1`` (whose rows may
come in the question layout: ``question``, an ``options`` list and a 0-based ``mcq_answer_index``).
In the question layout the default reads the ``options`` list, and ``parity`` searches the ``question``
text where ``score.py`` searched the ``multi_choice_prompt`` (an option-text hit is never scored right
in ``parity`` anyway, so only the count of unreadable answers can differ).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m4build.errors import InputFileError, UsageError
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
from m4build.metrics import ChoiceRecord, InputProblems, score_choices
from m4build.sources.benchmarks import Row, dataset_rows, require_columns, string_list

BENCHMARK = "worldcuisines"
VQA_DATASET = "worldcuisines/vqa-v1.1"
VQA_CONFIGS = ("task1", "task2")
SMALL_SPLIT, LARGE_SPLIT = "test_small", "test_large"
# score.py's final_cat_mapping: the names the paper's tables give the four prompt types.
PROMPT_TYPE_NAMES = {
    "1": "1a. Dish Name (No-Context)",
    "2": "2. Regional Cuisine",
    "3": "1b. Dish Name (Contextualized)",
    "4": "1c. Dish Name (Adversarial)",
}
PREDICTION_COLUMNS = ("qa_id", "prediction", "lang", "multi_choice_answer")
PROMPT_LAYOUT = ("qa_id", "lang", "prompt_type", "multi_choice_prompt", "multi_choice_answer")
QUESTION_LAYOUT = ("qa_id", "lang", "prompt_type", "question", "options", "mcq_answer_index")

_FILE_NAME = re.compile(r"(?P<task>task[12])_(?P<kind>mc|oe)_(?P<model>.+?)_pred(?:_(?P<size>[A-Za-z0-9]+))?")
_HINT = (
    "Pass the VQA rows of the split and version the predictions were made on (for *_pred_small.jsonl "
    "files: the small test set, e.g. --vqa-split test_small), and one prediction per (qa_id, lang)."
)


@dataclass(frozen=True)
class PredictionFileName:
    """What the repository's file naming says: ``task1_mc_gpt-4o-mini-2024-07-18_pred_small.jsonl``."""

    task: str
    kind: str  # "mc" (multiple choice) or "oe" (open-ended)
    model: str
    size: str | None  # "small" for the small test set; None for the large one


def parse_file_name(path: Path) -> PredictionFileName | None:
    """Task, answer kind, model and test-set size, if the file name follows the repository's scheme."""
    match = _FILE_NAME.fullmatch(path.name.removesuffix(path.suffix))
    if match is None:
        return None
    return PredictionFileName(match["task"], match["kind"], match["model"], match["size"])


@dataclass(frozen=True)
class Prediction:
    """One line of a prediction file."""

    qa_id: str
    lang: str
    output: str
    gold_option: int
    origin: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.qa_id, self.lang)


@dataclass(frozen=True)
class VqaPrompt:
    """What scoring needs of one VQA row: its prompt type, the prompt the model saw, the right option."""

    qa_id: str
    lang: str
    prompt_type: str
    prompt_text: str
    options: tuple[str, ...] | None  # None: read them from the prompt's numbered lines
    gold_option: int
    origin: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.qa_id, self.lang)


# --- prediction files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PredictionSet:
    """The predictions of one model, and what the file names said about them."""

    predictions: tuple[Prediction, ...]
    files: tuple[Path, ...]
    model: str | None
    split: str | None  # the test set the file names point to; None when they do not say


def read_predictions(paths: Sequence[Path], *, model: str | None = None) -> PredictionSet:
    """Read WorldCuisines multiple-choice prediction files (a folder stands for its JSON/JSONL files).

    ``model`` names the model when the file names do not follow the repository's scheme (or
    overrides what they say). Malformed lines raise ``InputFileError`` naming the file and line;
    bad values are collected and raised together as ``MetricInputError``.
    """
    files = prediction_files(paths)
    names = {path: parse_file_name(path) for path in files}
    _refuse_open_ended(names)
    problems = InputProblems(f"{BENCHMARK} predictions")
    predictions: list[Prediction] = collect_predictions(files, _prediction, problems)
    _find_duplicates(predictions, problems)
    problems.raise_if_any(_HINT)
    return PredictionSet(tuple(predictions), tuple(files), model or _model_of(names), _split_of(names))


def _refuse_open_ended(names: Mapping[Path, PredictionFileName | None]) -> None:
    open_ended = [str(path) for path, name in names.items() if name is not None and name.kind == "oe"]
    if open_ended:
        raise UsageError(
            f"Open-ended prediction files cannot be scored here: {', '.join(open_ended)}",
            "This command scores multiple-choice predictions (task1_mc_*/task2_mc_* files).",
        )


def _model_of(names: Mapping[Path, PredictionFileName | None]) -> str | None:
    models = sorted({name.model for name in names.values() if name is not None})
    if len(models) > 1:
        raise UsageError(
            f"The prediction files name different models: {', '.join(models)}",
            "Score one model at a time (pass --model NAME to score files whose names disagree anyway).",
        )
    return models[0] if models else None


def _split_of(names: Mapping[Path, PredictionFileName | None]) -> str | None:
    """``test_small`` for ``*_pred_small`` files, ``test_large`` for ``*_pred``; None if unknown or mixed."""
    splits = {
        SMALL_SPLIT if name.size == "small" else LARGE_SPLIT if name.size is None else None
        for name in names.values()
        if name is not None
    }
    return splits.pop() if len(splits) == 1 else None


def _prediction(row: Row, problems: InputProblems) -> Prediction | None:
    data = row.data
    if "multi_choice_answer" not in data and "answer" in data:
        raise UsageError(
            f"{row.origin} is an open-ended prediction (an `answer`, no `multi_choice_answer`).",
            "This command scores multiple-choice predictions (task1_mc_*/task2_mc_* files).",
        )
    require_columns(data.keys(), PREDICTION_COLUMNS, row.origin)
    qa_id, lang = cell_text(data["qa_id"]), cell_text(data["lang"])
    output, gold = _output_text(data["prediction"]), cell_integer(data["multi_choice_answer"])
    if qa_id is None:
        problems.add("lines without a qa_id", row.origin)
    if lang is None:
        problems.add("lines without a lang", row.origin)
    if output is None:
        problems.add("lines whose prediction is missing or not text", row.origin)
    if gold is None:
        problems.add("lines whose multi_choice_answer is not a whole number", row.origin)
    if qa_id is None or lang is None or output is None or gold is None:
        return None
    return Prediction(qa_id, lang, output, gold, row.origin)


def _output_text(value: Any) -> str | None:
    """The model's answer as text; a bare JSON number (``"prediction": 2``) is read as its digits."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _find_duplicates(predictions: Iterable[Prediction], problems: InputProblems) -> None:
    first: dict[tuple[str, str], Prediction] = {}
    for prediction in predictions:
        earlier = first.setdefault(prediction.key, prediction)
        if earlier is not prediction:
            problems.add(
                "duplicate predictions for one (qa_id, lang)",
                f"qa_id {prediction.qa_id!r}, lang {prediction.lang!r} "
                f"at {earlier.origin} and {prediction.origin}",
            )


# --- VQA rows ------------------------------------------------------------------------------------


def read_vqa(
    sources: Sequence[str], *, configs: Sequence[str] = VQA_CONFIGS, split: str = LARGE_SPLIT
) -> dict[tuple[str, str], VqaPrompt]:
    """VQA prompts by (``qa_id``, ``lang``) from local files/folders or Hub dataset ids.

    A Hub id (``worldcuisines/vqa-v1.1``) is loaded once per config in ``configs`` at ``split``;
    local JSONL/parquet/CSV files and folders are read as they are. A (``qa_id``, ``lang``) found twice
    is an error (the same file passed twice, or two splits mixed).
    """
    if not sources:
        raise UsageError(
            "No VQA rows given.", f"Pass --vqa with hf_prompt JSONL files or a Hub id ({VQA_DATASET})."
        )
    prompts: dict[tuple[str, str], VqaPrompt] = {}
    for row in _vqa_rows(sources, configs, split):
        prompt = vqa_prompt(row)
        earlier = prompts.setdefault(prompt.key, prompt)
        if earlier is not prompt:
            raise InputFileError(
                f"VQA row qa_id {prompt.qa_id!r}, lang {prompt.lang!r} appears twice: "
                f"{earlier.origin} and {prompt.origin}",
                "Pass each VQA file once, and the rows of one split only.",
            )
    if not prompts:
        raise InputFileError(f"No VQA rows in {', '.join(sources)}.", "Pass the hf_prompt JSONL files.")
    return prompts


def _vqa_rows(sources: Sequence[str], configs: Sequence[str], split: str) -> Iterator[Row]:
    local = [source for source in sources if not is_hub_id(source)]
    yield from local_table_rows(local, "--vqa")
    for dataset in (source for source in sources if is_hub_id(source)):
        for config in configs:
            loaded = hub_dataset(dataset, config, split, "--vqa")
            layout = PROMPT_LAYOUT if "multi_choice_prompt" in loaded.column_names else QUESTION_LAYOUT
            yield from dataset_rows(loaded, f"{dataset} ({config}, {split})", layout)


def vqa_prompt(row: Row) -> VqaPrompt:
    """One VQA row, in the prompt layout or the question layout, reduced to what scoring needs."""
    data = row.data
    layout = PROMPT_LAYOUT if "multi_choice_prompt" in data else QUESTION_LAYOUT
    require_columns(data.keys(), layout, row.origin)
    qa_id, lang, prompt_type = (cell_text(data[column]) for column in ("qa_id", "lang", "prompt_type"))
    if qa_id is None or lang is None or prompt_type is None:
        raise InputFileError(f"{row.origin}: qa_id, lang and prompt_type must be non-empty text or numbers.")
    if layout is PROMPT_LAYOUT:
        prompt_text, options = data["multi_choice_prompt"], None
        gold = cell_integer(data["multi_choice_answer"])
    else:
        prompt_text = data["question"]
        options = tuple(string_list(data["options"], "options", row.origin))
        index = cell_integer(data["mcq_answer_index"])
        gold = None if index is None else index + 1
    if not isinstance(prompt_text, str) or gold is None:
        raise InputFileError(
            f"{row.origin}: the prompt must be text and the answer a whole number.",
            f"Expected the columns {', '.join(layout)}.",
        )
    return VqaPrompt(qa_id, lang, prompt_type, prompt_text, options, gold, row.origin)


# --- scoring -------------------------------------------------------------------------------------


def choice_records(
    predictions: Iterable[Prediction], prompts: Mapping[tuple[str, str], VqaPrompt]
) -> list[ChoiceRecord]:
    """Join every prediction to its VQA prompt; unknown pairs and disagreeing gold answers are refused."""
    problems = InputProblems(f"{BENCHMARK} predictions")
    records = []
    for prediction in predictions:
        prompt = prompts.get(prediction.key)
        if prompt is None:
            problems.add(
                "predictions whose (qa_id, lang) is not in the VQA rows",
                f"{prediction.origin} (qa_id {prediction.qa_id!r}, lang {prediction.lang!r})",
            )
            continue
        if prompt.gold_option != prediction.gold_option:
            problems.add(
                "predictions whose multi_choice_answer differs from the VQA row's",
                f"{prediction.origin}: {prediction.gold_option} vs {prompt.gold_option} at {prompt.origin}",
            )
            continue
        records.append(
            ChoiceRecord(
                item_id=f"{prediction.qa_id}-{prediction.lang}",
                language=prediction.lang,
                prompt_type=prompt.prompt_type,
                raw_output=prediction.output,
                gold_option=prediction.gold_option,
                options=prompt.options,
                prompt_text=prompt.prompt_text,
            )
        )
    problems.raise_if_any(_HINT)
    return records


def score_worldcuisines(
    predictions: PredictionSet,
    prompts: Mapping[tuple[str, str], VqaPrompt],
    *,
    mode: str = "default",
    inputs: Mapping[str, Any] | None = None,
) -> ChoiceReport:
    """Accuracy per prompt type and language, the per-type averages and the macro/micro averages."""
    mode = checked_mode(mode)
    accuracy = score_choices(choice_records(predictions.predictions, prompts), mode=mode)
    return ChoiceReport(
        benchmark=BENCHMARK,
        mode=mode,
        accuracy=accuracy,
        prompt_type_names=dict(PROMPT_TYPE_NAMES),
        inputs={"predictions": [str(path) for path in predictions.files], **(inputs or {})},
        details={"model": predictions.model},
    )
