"""WorldCuisines VQA items as ``BenchmarkItem``s, with their English counterparts and cuisine terms.

Inputs: the VQA rows (``worldcuisines/vqa-v1.1`` on the Hub, configs ``task1``/``task2``, or the
``hf_prompt/*.jsonl`` files of the WorldCuisines repository) and the food knowledge base
(``worldcuisines/food-kb`` or the repository's ``resources/final_data.csv``), which gives each dish
its cuisine. Two row layouts are accepted, because the Hub and the repository differ:

- prompt layout (repository ``hf_prompt`` files): the question and its numbered options are one
  ``multi_choice_prompt`` text, ``multi_choice_answer`` is the 1-based option number;
- question layout (``vqa-v1.1`` as M4-RAG's code reads it): ``question``, a list of ``options``
  and a 0-based ``mcq_answer_index``.

The answer in the item's language is the text of the right option in that language's prompt
(options are localised per language, e.g. ja "ワカモレ"; some stay in English), not the ``answer``
column. English question and answer come from the ``en`` row of the same question, which is loaded
even when English is not requested. The domain term is the dish's cuisine ("Mexican cuisine") and
its name in the item's language, from ``corpora/worldcuisines/queries.yaml`` and the WorldCuisines
cuisine-name table copied next to it.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from m4build.errors import InputFileError, UsageError
from m4build.records import BenchmarkItem, MultipleChoice
from m4build.resources import data_path
from m4build.sources.benchmarks import (
    LoadedItems,
    Row,
    SkippedItem,
    Source,
    check_langs,
    dataset_rows,
    empty_reason,
    finish,
    input_files,
    load_hub_dataset,
    parse_literal,
    read_table,
    require_columns,
    resolve_source,
    string_list,
    text,
)

logger = logging.getLogger(__name__)

BENCHMARK = "worldcuisines"
VQA_DATASET = "worldcuisines/vqa-v1.1"
FOOD_KB_DATASET = "worldcuisines/food-kb"
TASKS = ("task1", "task2")
SPLITS = ("test_small", "test_large", "train")
ENGLISH = "en"

PROMPT_LAYOUT = ("qa_id", "lang", "food_id", "multi_choice_prompt", "multi_choice_answer")
QUESTION_LAYOUT = ("qa_id", "lang", "food_id", "question", "options", "mcq_answer_index")
PROVENANCE = ("prompt_id", "prompt_type", "lang_status")  # kept in `extra` when present
FOOD_KB_COLUMNS = ("Name", "Cuisines")
FOOD_KB_DESCRIPTION = "Text Description"  # M4-RAG's oracle context for WorldCuisines
IMAGE_URL = "image_url"

# The repository's `task` column reads e.g. "small_task1": the split and the task in one word.
_TASK_FIELD = re.compile(r"(small|large|train)_(task[12])")
_SPLIT_OF = {"small": "test_small", "large": "test_large", "train": "train"}
_OPTION_LINE = re.compile(r"(\d+)\.\s*(.*)")


# --- question parsing ----------------------------------------------------------------------------


def split_prompt(prompt: str) -> tuple[str, list[str]]:
    """Split a multiple-choice prompt into the question and its numbered options.

    The options are the last run of lines numbered 1., 2., 3., ...; everything above the run is the
    question (contextualised and adversarial prompts have several lines of it), and the answer
    instruction below the run is dropped. A text without options is all question.
    """
    lines = prompt.splitlines()
    starts = [
        index for index, line in enumerate(lines) if _OPTION_LINE.fullmatch(line) and line.startswith("1.")
    ]
    if not starts:
        return prompt.strip(), []
    options: list[str] = []
    for line in lines[starts[-1] :]:
        match = _OPTION_LINE.fullmatch(line)
        if match is None or int(match.group(1)) != len(options) + 1:
            break
        options.append(match.group(2).strip())
    return "\n".join(lines[: starts[-1]]).strip(), options


@dataclass(frozen=True)
class VqaRecord:
    """One VQA row reduced to what an item needs, whichever layout it came in."""

    task: str
    split: str
    qa_id: str
    lang: str
    food_id: str
    question: str
    answer: str
    origin: str
    extra: dict[str, str] = field(default_factory=dict)
    options: tuple[str, ...] = ()
    answer_index: int = 0
    image_url: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """Rows of the same question in different languages share this key."""
        return (self.task, self.split, self.qa_id)

    @property
    def item_id(self) -> str:
        return f"{BENCHMARK}/{self.task}/{self.split}/{self.qa_id}/{self.lang}"


def vqa_record(row: Row, task: str | None, split: str) -> VqaRecord:
    """Read one VQA row; ``task``/``split`` are used where the row does not say them itself."""
    data = row.data
    layout = PROMPT_LAYOUT if "multi_choice_prompt" in data else QUESTION_LAYOUT
    require_columns(data.keys(), layout, row.origin)
    if layout is PROMPT_LAYOUT:
        question, options = split_prompt(text(data["multi_choice_prompt"]))
        index = _as_int(data["multi_choice_answer"], "multi_choice_answer", row.origin) - 1
    else:
        question, inline = split_prompt(text(data["question"]))
        options = (
            string_list(data["options"], "options", row.origin) if data["options"] is not None else inline
        )
        index = _as_int(data["mcq_answer_index"], "mcq_answer_index", row.origin)
    if not 0 <= index < len(options):
        raise InputFileError(f"{row.origin}: the answer index points past the {len(options)} option(s)")
    row_task, row_split = _task_and_split(data, task, split, row.origin)
    return VqaRecord(
        task=row_task,
        split=row_split,
        qa_id=text(data["qa_id"]),
        lang=text(data["lang"]),
        food_id=text(data["food_id"]),
        question=question,
        answer=options[index],
        origin=row.origin,
        extra={name: text(data[name]) for name in PROVENANCE if text(data.get(name))},
        options=tuple(options),
        answer_index=index,
        image_url=text(data.get(IMAGE_URL)) or None,
    )


def _as_int(value: Any, column: str, origin: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise InputFileError(f"{origin}: {column} must be a whole number, got {value!r}") from exc


def _task_and_split(data: Mapping[str, Any], task: str | None, split: str, origin: str) -> tuple[str, str]:
    """The row's own ``task`` column wins ("small_task1"); then the config; then the prompt type.

    Prompt type 2 is the location question (task 2); types 1, 3 and 4 ask for the dish name (task 1).
    """
    match = _TASK_FIELD.fullmatch(text(data.get("task")))
    if match:
        return match.group(2), _SPLIT_OF[match.group(1)]
    if task:
        return task, split
    prompt_type = text(data.get("prompt_type"))
    if prompt_type:
        return ("task2" if prompt_type == "2" else "task1"), split
    raise InputFileError(f"{origin}: cannot tell task1 from task2", "Add a `task` or `prompt_type` column.")


# --- cuisines ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Food:
    name: str
    cuisine: str | None  # first entry of `Cuisines`, in English
    description: str | None = None  # `Text Description`, in English


def food_index(rows: Iterable[Row]) -> dict[str, Food]:
    """food_id -> dish, from food-kb rows.

    The repository's ``final_data.csv`` has no id column: a VQA row's ``food_id`` is the 0-based
    position of its dish there. The Hub knowledge base and the shipped sample carry ``food_id``.
    """
    index = {}
    for position, row in enumerate(rows):
        require_columns(row.data.keys(), FOOD_KB_COLUMNS, row.origin)
        food_id = text(row.data.get("food_id")) or str(position)
        index[food_id] = Food(
            text(row.data["Name"]),
            first_cuisine(row.data["Cuisines"], row.origin),
            text(row.data.get(FOOD_KB_DESCRIPTION)) or None,
        )
    return index


def first_cuisine(value: Any, origin: str) -> str | None:
    """The first cuisine of a ``Cuisines`` cell: a JSON list as text, a list, or one plain name."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = parse_literal(value, "Cuisines", origin)
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return text(value) or None


@dataclass(frozen=True)
class LanguageTerm:
    """How one language code names a cuisine: which table column, and how to phrase it."""

    column: str | None  # None: the food-kb (English) cuisine name itself
    template: str
    lowercase_first: bool = False
    endings: tuple[tuple[str, str], ...] = ()
    overrides: Mapping[str, str | None] = field(default_factory=dict)


class CuisineTerms:
    """Cuisine domain terms in English and in every WorldCuisines language (see queries.yaml)."""

    _KEYS = frozenset({"column", "template", "lowercase_first", "endings", "overrides"})

    def __init__(
        self, english_template: str, languages: Mapping[str, LanguageTerm], table: Sequence[Mapping[str, str]]
    ):
        self.english_template = english_template
        self.languages = dict(languages)
        self._rows: dict[str, Mapping[str, str]] = {}
        for key_column in ("English_<CUISINE>", "base_key"):  # English name first, then place name
            for row in table:  # first row wins: the table lists e.g. China and Mainland China as "Chinese"
                self._rows.setdefault(row.get(key_column, "").strip().casefold(), row)
        self._rows.pop("", None)

    @classmethod
    def from_files(cls, spec_path: Path, table_path: Path) -> CuisineTerms:
        """Read and check the spec and the table; a bad spec is an input error naming the file."""
        with spec_path.open(encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)
        with table_path.open(encoding="utf-8", newline="") as handle:
            table = list(csv.DictReader(handle))
        columns = set(table[0]) if table else set()
        languages = {
            code: cls._language(code, entry, columns, spec_path) for code, entry in spec["languages"].items()
        }
        return cls(spec["english_template"], languages, table)

    @classmethod
    def _language(
        cls, code: str, entry: Mapping[str, Any], columns: set[str], spec_path: Path
    ) -> LanguageTerm:
        unknown = sorted(set(entry) - cls._KEYS)
        if unknown:
            raise InputFileError(f"{spec_path}: language {code!r} has unknown keys {unknown}")
        if "{cuisine}" not in entry.get("template", ""):
            raise InputFileError(f"{spec_path}: the template of language {code!r} lacks {{cuisine}}")
        if entry.get("column") is not None and entry["column"] not in columns:
            raise InputFileError(
                f"{spec_path}: language {code!r} names column {entry['column']!r}, not in the cuisine table"
            )
        return LanguageTerm(
            column=entry.get("column"),
            template=entry["template"],
            lowercase_first=bool(entry.get("lowercase_first", False)),
            endings=tuple((old, new) for old, new in entry.get("endings", [])),
            overrides={name.casefold(): value for name, value in (entry.get("overrides") or {}).items()},
        )

    def codes(self) -> list[str]:
        return sorted(self.languages)

    def english(self, cuisine: str) -> str:
        return self.english_template.replace("{cuisine}", cuisine)

    def native(self, lang: str, cuisine: str) -> str | None:
        """The term in ``lang``, or None where the table (or an override) has no name for it."""
        term = self.languages[lang]
        key = cuisine.strip().casefold()
        if term.column is None:
            word = cuisine.strip()
        elif key in term.overrides:
            word = term.overrides[key]
        else:
            row = self._rows.get(key)
            word = _reshape(row.get(term.column, "").strip(), term) if row else None
        return term.template.replace("{cuisine}", word) if word else None


def _reshape(word: str, term: LanguageTerm) -> str:
    for old, new in term.endings:
        if word.endswith(old):
            word = word[: -len(old)] + new
            break
    if term.lowercase_first and word:
        word = word[0].lower() + word[1:]
    return word


@cache
def packaged_terms() -> CuisineTerms:
    return CuisineTerms.from_files(
        data_path("corpora", "worldcuisines", "queries.yaml"),
        data_path("corpora", "worldcuisines", "cuisine_names.csv"),
    )


# --- loading -------------------------------------------------------------------------------------


def load_worldcuisines(
    langs: Sequence[str],
    *,
    source: Source = "sample",
    limit_per_lang: int | None = None,
    food_kb: Source | None = None,
    vqa_dataset: str = VQA_DATASET,
    food_kb_dataset: str = FOOD_KB_DATASET,
    tasks: Sequence[str] = TASKS,
    split: str = "test_small",
) -> LoadedItems:
    """WorldCuisines items for ``langs`` (see ``m4build.sources.benchmarks.load_items``).

    ``food_kb`` says where the food knowledge base comes from: ``"hub"``, ``"sample"`` or files.
    By default it follows ``source``; with local VQA files it may also sit among them (a table with
    ``Name`` and ``Cuisines`` columns is recognised as the knowledge base).
    """
    terms = packaged_terms()
    check_langs(langs, terms.codes(), BENCHMARK)
    _check_choice("task", tasks, TASKS)
    _check_choice("split", [split], SPLITS)
    wanted = set(langs) | {ENGLISH}
    vqa_rows, kb_rows = _inputs(resolve_source(source), food_kb, vqa_dataset, food_kb_dataset, tasks, split)
    records = list(_records(vqa_rows, wanted, split))
    english = {record.key: record for record in records if record.lang == ENGLISH}
    foods = food_index(kb_rows)
    requested = set(langs)
    items, skipped = [], []
    for record in records:
        if record.lang not in requested:
            continue
        result = _item(record, english.get(record.key), foods.get(record.food_id), terms)
        (skipped if isinstance(result, SkippedItem) else items).append(result)
    unknown_foods = sorted({item.extra["food_id"] for item in items if "cuisine" not in item.extra})
    if unknown_foods:
        logger.warning(
            "%d food_id(s) have no cuisine in the food knowledge base, e.g. %s",
            len(unknown_foods),
            unknown_foods[:3],
        )
    return finish(items, skipped, langs, limit_per_lang)


def _check_choice(name: str, values: Sequence[str], valid: Sequence[str]) -> None:
    bad = [value for value in values if value not in valid]
    if bad:
        raise UsageError(f"unknown WorldCuisines {name}: {', '.join(bad)}", f"Valid: {', '.join(valid)}.")


def _records(rows: Iterable[tuple[Row, str | None]], wanted: set[str], split: str) -> Iterator[VqaRecord]:
    for row, task in rows:
        if text(row.data.get("lang")) in wanted:
            yield vqa_record(row, task, split)


def _item(
    record: VqaRecord, english: VqaRecord | None, food: Food | None, terms: CuisineTerms
) -> BenchmarkItem | SkippedItem:
    reason = empty_reason(record.question, record.answer)
    if reason:
        return SkippedItem(record.item_id, record.lang, reason, record.origin)
    extra = {
        "food_id": record.food_id,
        "qa_id": record.qa_id,
        "task": record.task,
        "split": record.split,
        **record.extra,
    }
    if food:
        extra["food_name"] = food.name
    cuisine = food.cuisine if food else None
    if cuisine:
        extra["cuisine"] = cuisine
    return BenchmarkItem(
        benchmark=BENCHMARK,
        item_id=record.item_id,
        lang=record.lang,
        question=record.question,
        answer=record.answer,
        question_en=english.question if english else None,
        answer_en=english.answer if english else None,
        domain_en=terms.english(cuisine) if cuisine else None,
        domain=terms.native(record.lang, cuisine) if cuisine else None,
        extra=extra,
        choice=MultipleChoice(
            options=record.options,
            answer_index=record.answer_index,
            options_en=english.options if english else (),
            image_url=record.image_url,
            oracle_context=food.description if food else None,
        ),
    )


def _inputs(
    source: str | list[Path],
    food_kb: Source | None,
    vqa_dataset: str,
    food_kb_dataset: str,
    tasks: Sequence[str],
    split: str,
) -> tuple[list[tuple[Row, str | None]], list[Row]]:
    """The VQA rows (each with the task its config implies, if any) and the food-kb rows."""
    if source == "sample":
        vqa = [(row, None) for row in read_table(data_path("corpora", "sample", BENCHMARK, "vqa.jsonl"))]
        found_kb: list[Row] = []
    elif source == "hub":
        vqa = [(row, task) for task in tasks for row in _hub_vqa_rows(vqa_dataset, task, split)]
        found_kb = []
    else:
        vqa, found_kb = _local_rows(source)
    kb_source = food_kb if food_kb is not None else (source if isinstance(source, str) else None)
    if kb_source is None:
        if not found_kb:
            raise UsageError(
                "WorldCuisines from local files needs the food knowledge base too",
                "Add final_data.csv (worldcuisines repo, resources/) or the worldcuisines/food-kb parquet "
                "to the inputs, or pass food_kb='hub'.",
            )
        return vqa, found_kb
    return vqa, _kb_rows(resolve_source(kb_source), food_kb_dataset)


def _hub_vqa_rows(dataset: str, task: str, split: str) -> Iterator[Row]:
    loaded = load_hub_dataset(dataset, task, split)
    layout = PROMPT_LAYOUT if "multi_choice_prompt" in loaded.column_names else QUESTION_LAYOUT
    return dataset_rows(loaded, f"{dataset} ({task}, {split})", layout, (*PROVENANCE, IMAGE_URL))


def _kb_rows(source: str | list[Path], dataset: str) -> list[Row]:
    if source == "sample":
        return read_table(data_path("corpora", "sample", BENCHMARK, "food_kb.csv"))
    if source == "hub":
        loaded = load_hub_dataset(dataset)
        # The food-kb card names its only split "main"; take whichever single split there is.
        split = "main" if "main" in loaded else next(iter(loaded))
        return list(dataset_rows(loaded[split], f"{dataset} ({split})", FOOD_KB_COLUMNS, ("food_id", FOOD_KB_DESCRIPTION)))
    return [row for path in input_files(source) for row in read_table(path)]


def _local_rows(paths: list[Path]) -> tuple[list[tuple[Row, str | None]], list[Row]]:
    """Split local tables into VQA rows and food-kb rows by their columns."""
    vqa: list[tuple[Row, str | None]] = []
    kb: list[Row] = []
    for path in input_files(paths):
        rows = read_table(path)
        if rows and all(column in rows[0].data for column in FOOD_KB_COLUMNS) and "qa_id" not in rows[0].data:
            kb.extend(rows)
        else:
            vqa.extend((row, None) for row in rows)
    return vqa, kb
