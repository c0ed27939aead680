"""The LLM judge that decides which answer keypoints state which ground-truth keypoints (CHARGE).

Correctness and Coverage (``m4build.metrics.keypoints``) are computed from the judge's decisions;
this module asks for them through ``m4build.llm`` with the versioned ``charge/keypoint_judge``
prompt, so the judgements are cached, retried, budgeted and carry the prompt version. A judge
answer that names a keypoint that does not exist is a failed judgement: it is reported with the
item, never repaired by guessing and never scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from m4build.llm.model import GenerationRequest, LanguageModel
from m4build.llm.prompts import PromptTemplate, load_prompt
from m4build.metrics.keypoints import KeypointJudgement

JUDGE_PROMPT = "charge/keypoint_judge"


class _Match(pydantic.BaseModel):
    ground_truth: int = pydantic.Field(ge=1)
    response: int = pydantic.Field(ge=1)


class KeypointJudgeAnswer(pydantic.BaseModel):
    """The judge's answer, with 1-based indices as the prompt numbers the keypoints."""

    response_keypoints: list[str]
    matches: list[_Match]


@dataclass(frozen=True)
class KeypointItem:
    """One answer to judge against its question's ground truth."""

    item_id: str
    question: str
    ground_truth_answer: str
    ground_truth_keypoints: Sequence[str]
    response: str


@dataclass(frozen=True)
class JudgedKeypoints:
    """Judgements ready for ``keypoint_scores``, the items the judge failed on, and the provenance."""

    judgements: tuple[KeypointJudgement, ...]
    failures: tuple[tuple[str, str], ...]  # (item id, why)
    provenance: dict[str, Any]


def judge_keypoints(
    model: LanguageModel, items: Iterable[KeypointItem], prompt: PromptTemplate | None = None
) -> JudgedKeypoints:
    """Ask the judge about every item, ``model.config.concurrency`` at a time."""
    prompt = prompt or load_prompt(JUDGE_PROMPT)
    items = list(items)
    requests = (
        GenerationRequest.from_prompt(
            prompt,
            {
                "question": item.question,
                "ground_truth_answer": item.ground_truth_answer,
                "ground_truth_keypoints": list(item.ground_truth_keypoints),
                "response": item.response,
            },
            schema=KeypointJudgeAnswer,
        )
        for item in items
    )
    judgements: dict[int, KeypointJudgement] = {}
    failures: dict[int, tuple[str, str]] = {}
    for index, generation in model.generate_many(requests):
        item = items[index]
        if not generation.ok:
            failures[index] = (item.item_id, generation.error or "no answer")
            continue
        judgement = _judgement(item, generation.value)
        if isinstance(judgement, str):
            failures[index] = (item.item_id, judgement)
        else:
            judgements[index] = judgement
    return JudgedKeypoints(
        judgements=tuple(judgements[i] for i in sorted(judgements)),
        failures=tuple(failures[i] for i in sorted(failures)),
        provenance={"judge": model.name, **prompt.provenance},
    )


def _judgement(item: KeypointItem, answer: KeypointJudgeAnswer) -> KeypointJudgement | str:
    references, predictions = len(item.ground_truth_keypoints), len(answer.response_keypoints)
    outside = [
        f"({match.ground_truth}, {match.response})"
        for match in answer.matches
        if match.ground_truth > references or match.response > predictions
    ]
    if outside:
        return (
            f"the judge matched keypoints that do not exist: {', '.join(outside)} "
            f"({references} ground-truth and {predictions} answer keypoints)"
        )
    return KeypointJudgement(
        item_id=item.item_id,
        reference=tuple(item.ground_truth_keypoints),
        predicted=tuple(answer.response_keypoints),
        matches=tuple((match.ground_truth - 1, match.response - 1) for match in answer.matches),
    )
