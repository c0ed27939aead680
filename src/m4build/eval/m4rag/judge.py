"""The paper's VLM-as-judge: how well each context passage supports answering each item (1–5).

The judge sees the image, the question, the gold answer and one passage, and answers with the
paper's rubric (``m4rag/judge``) in JSON. Scores are kept per (item, passage); their per-item
aggregation and the binning against retention and correction live in ``m4build.metrics.paired``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pydantic

from m4build.eval.m4rag.items import EvalItem
from m4build.llm.messages import ImagePart
from m4build.llm.model import GenerationRequest, LanguageModel
from m4build.llm.prompts import PromptTemplate
from m4build.metrics.paired import JudgeScore
from m4build.progress import NullProgress, ProgressReporter
from m4build.runs import atomic_write_parquet

JUDGE_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("passage_id", pa.string()),
        ("score", pa.float64()),
        ("explanation", pa.string()),
        ("error", pa.string()),
        ("model", pa.string()),
        ("prompt", pa.string()),
        ("prompt_version", pa.string()),
        ("prompt_sha256", pa.string()),
    ]
)


class JudgeAnswer(pydantic.BaseModel):
    """The rubric's answer: a short explanation and one holistic score from 1 to 5."""

    explanation: str = ""
    answer: int = pydantic.Field(ge=1, le=5)


def judge_contexts(
    model: LanguageModel,
    prompt: PromptTemplate,
    pairs: Sequence[tuple[EvalItem, str, str]],
    images: Mapping[str, bytes],
    path: Path,
    progress: ProgressReporter | None = None,
) -> list[JudgeScore]:
    """Judge every ``(item, passage id, passage text)``; rows go to ``path``, failures included."""
    progress = progress or NullProgress()
    requests = (
        GenerationRequest.from_prompt(
            prompt,
            {"question": item.question, "ground_truth_answer": item.answer, "context": text},
            images=[ImagePart.from_bytes(images[item.item_id])],
            schema=JudgeAnswer,
        )
        for item, _passage, text in pairs
    )
    rows: dict[int, dict[str, Any]] = {}
    with progress.task("judge", total=len(pairs)) as advance:
        for index, generation in model.generate_many(requests):
            item, passage_id, _text = pairs[index]
            answer = generation.value if generation.ok else None
            rows[index] = {
                "item_id": item.item_id,
                "passage_id": passage_id,
                "score": float(answer.answer) if answer else None,
                "explanation": answer.explanation if answer else None,
                "error": generation.error,
                "model": model.name,
                **prompt.provenance,
            }
            advance(1)
    ordered = [rows[index] for index in sorted(rows)]
    atomic_write_parquet(path, pa.Table.from_pylist(ordered, schema=JUDGE_SCHEMA))
    return [JudgeScore(row["item_id"], row["passage_id"], row["score"]) for row in ordered if row["error"] is None]
