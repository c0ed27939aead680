"""The benchmark rows an evaluation asks about, with options, gold answer, image and oracle text.

WorldCuisines items are evaluated as given (one item per question and language). CVQA items are
evaluated twice, as M4-RAG does: with the question and options in the local language
(``prompt_type`` "local") and in their English translation ("en"), so the report can show what the
language of the question costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from m4build.languages import load_languages
from m4build.records import BenchmarkItem
from m4build.sources.benchmarks import load_items

LOCAL, ENGLISH = "local", "en"


@dataclass(frozen=True)
class EvalItem:
    """One question as the model under test sees it."""

    item_id: str
    benchmark: str
    lang: str  # benchmark language code, e.g. "ja_formal", "es_mx"
    prompt_type: str  # WorldCuisines prompt type ("1".."4"); CVQA "local" or "en"
    question: str
    options: tuple[str, ...]
    gold_option: int  # 1-based
    question_en: str  # the English question, for captions and judging
    answer_en: str  # the English gold answer, for oracle captions and judging
    image_url: str | None = None
    image: bytes | None = field(default=None, repr=False)
    oracle_context: str | None = None  # WorldCuisines: the dish's food-kb description
    country: str | None = None

    @property
    def answer(self) -> str:
        return self.options[self.gold_option - 1]

    @property
    def in_english(self) -> bool:
        return self.lang == "en" or self.prompt_type == ENGLISH


def load_eval_items(
    benchmark: str,
    langs: Sequence[str],
    *,
    source: Any = "sample",
    limit_per_lang: int | None = None,
    options: dict[str, Any] | None = None,
) -> list[EvalItem]:
    """Evaluation items of ``benchmark`` for ``langs``, sorted by id."""
    extra: dict[str, Any] = {}
    if benchmark == "cvqa":
        registry = load_languages()
        extra["subset_codes"] = {
            tuple(lang.cvqa_subset): lang.code for lang in registry.all("cvqa") if lang.cvqa_subset
        }
        extra["images"] = True
    loaded = load_items(
        benchmark, list(langs), source=source, limit_per_lang=limit_per_lang, options=options, **extra
    )
    items: list[EvalItem] = []
    for item in loaded:
        items.extend(_worldcuisines(item) if benchmark == "worldcuisines" else _cvqa(item))
    return sorted(items, key=lambda item: item.item_id)


def _worldcuisines(item: BenchmarkItem) -> list[EvalItem]:
    choice = item.choice
    assert choice is not None, "WorldCuisines items always carry their options"
    return [
        EvalItem(
            item_id=item.item_id,
            benchmark=item.benchmark,
            lang=item.lang,
            prompt_type=item.extra.get("prompt_type", ""),
            question=item.question,
            options=choice.options,
            gold_option=choice.answer_option,
            question_en=item.question_en or item.question,
            answer_en=item.answer_en or item.answer,
            image_url=choice.image_url,
            oracle_context=choice.oracle_context,
            country=None,
        )
    ]


def _cvqa(item: BenchmarkItem) -> list[EvalItem]:
    choice = item.choice
    assert choice is not None, "CVQA items always carry their options"
    common = {
        "benchmark": item.benchmark,
        "lang": item.lang,
        "gold_option": choice.answer_option,
        "question_en": item.question_en or item.question,
        "answer_en": item.answer_en or item.answer,
        "image": choice.image,
        "country": item.extra.get("country"),
    }
    local = EvalItem(
        item_id=f"{item.item_id}-{LOCAL}", prompt_type=LOCAL, question=item.question, options=choice.options, **common
    )
    if not item.question_en or len(choice.options_en) != len(choice.options):
        return [local]
    english = EvalItem(
        item_id=f"{item.item_id}-{ENGLISH}",
        prompt_type=ENGLISH,
        question=item.question_en,
        options=choice.options_en,
        **common,
    )
    return [local, english]
