"""The model under test answering each item, and the record kept of every answer.

The prompt is the paper's inference prompt (``m4rag/inference``): the question, the numbered
options, the context passages when the setting gives any, and the JSON answer format. The answer
is read with the WorldCuisines parse cascade (``m4build.metrics.parse_choice``, after reasoning
blocks and code fences), and the record keeps the raw output beside the parsed option, so a
different parser can be applied later without asking the model again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from m4build.eval.m4rag.items import EvalItem
from m4build.eval.m4rag.retrieval import Passage
from m4build.llm.messages import ImagePart
from m4build.llm.model import Generation, GenerationRequest
from m4build.llm.prompts import PromptTemplate
from m4build.metrics.choice import parse_choice

PREDICTION_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("lang", pa.string()),
        ("prompt_type", pa.string()),
        ("setting", pa.string()),
        ("gold_option", pa.int32()),
        ("raw_output", pa.string()),
        ("parsed_option", pa.int32()),
        ("parse_rule", pa.string()),
        ("correct", pa.bool_()),
        ("context", pa.list_(pa.string())),
        ("passage_ids", pa.list_(pa.string())),
        ("passage_ranks", pa.list_(pa.int32())),
        ("passage_scores", pa.list_(pa.float64())),
        ("error", pa.string()),
        ("cached", pa.bool_()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("model", pa.string()),
        ("prompt", pa.string()),
        ("prompt_version", pa.string()),
        ("prompt_sha256", pa.string()),
    ]
)


@dataclass(frozen=True)
class ItemContext:
    """What one item is given in one setting: context texts (with their passages, if retrieved)."""

    texts: tuple[str, ...] = ()
    passages: tuple[Passage, ...] = ()
    instruction: str | None = None
    labels: Mapping[str, str] | None = None
    error: str | None = None  # a step before inference failed for this item (e.g. its translation)


def inference_request(
    prompt: PromptTemplate, item: EvalItem, context: ItemContext, image: bytes
) -> GenerationRequest:
    variables: dict[str, Any] = {
        "question": item.question,
        "options": list(item.options),
        "contexts": list(context.texts) or None,
        "layout": item.benchmark,
        "instruction": context.instruction,
        "labels": dict(context.labels) if context.labels else None,
    }
    return GenerationRequest.from_prompt(prompt, variables, images=[ImagePart.from_bytes(image)])


def prediction_record(
    setting: str, item: EvalItem, context: ItemContext, generation: Generation | None, prompt: PromptTemplate
) -> dict[str, Any]:
    """One row of predictions.parquet; ``generation`` is None when the item failed before inference."""
    raw = generation.text if generation else ""
    error = context.error or (generation.error if generation and not generation.ok else None)
    parsed = parse_choice(raw, options=item.options) if error is None else None
    return {
        "item_id": item.item_id,
        "lang": item.lang,
        "prompt_type": item.prompt_type,
        "setting": setting,
        "gold_option": item.gold_option,
        "raw_output": raw,
        "parsed_option": parsed.option if parsed else None,
        "parse_rule": parsed.rule.value if parsed and parsed.rule else None,
        "correct": bool(parsed and parsed.option == item.gold_option),
        "context": list(context.texts),
        "passage_ids": [passage.id for passage in context.passages],
        "passage_ranks": [passage.rank for passage in context.passages],
        "passage_scores": [passage.score for passage in context.passages],
        "error": error,
        "cached": bool(generation and generation.cached),
        "input_tokens": generation.input_tokens if generation else 0,
        "output_tokens": generation.output_tokens if generation else 0,
        "cost_usd": generation.cost_usd if generation else 0.0,
        "model": generation.provenance.get("model") if generation else None,
        **prompt.provenance,
    }


def records_table(records: Sequence[Mapping[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(records), schema=PREDICTION_SCHEMA)
