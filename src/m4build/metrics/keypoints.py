"""CHARGE's keypoint Correctness and Coverage, computed from a judge's keypoint matches.

Reference: Chart-MRAG Bench (CHARGE; Yang et al., arXiv:2502.14864, repository Nomothings/CHARGE).
Every question carries ground-truth keypoints (``gt_keypoints``: the facts, from text and charts,
that the answer must state). The keypoints of a model's response are compared with them by an LLM
judge, which decides which response keypoint states which ground-truth keypoint. The paper defines

* Correctness: the response's keypoints match the ground truth's exactly, with the same number;
* Coverage: matched ground-truth keypoints / ground-truth keypoints.

CHARGE releases no evaluation code (issue #3 of its repository asks for it), so the metric here is
the paper's prose made precise, over the judge's decisions, with no parity mode:

* a ground-truth keypoint matched by several response keypoints, or the same pair judged twice,
  counts once for Coverage (Coverage asks which facts were stated, not how often);
* Correctness needs as many response keypoints as ground-truth ones and a one-to-one pairing
  among the judged matches that uses them all (a maximum bipartite matching of that size), so one
  response keypoint judged to state two facts cannot stand in for a missing one, and an extra
  unsupported claim makes the answer incorrect;
* a response with no keypoints (a refusal, an empty answer) is scored 0 on both, never skipped.

A match naming a keypoint index that does not exist, an item without ground-truth keypoints, or
an item judged twice is bad input and raises ``MetricInputError``.

The judge (written separately) fills one ``KeypointJudgement`` per item.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from m4build.metrics.checks import InputProblems

_HINT = (
    "Judge each item once; give it at least one ground-truth keypoint, and write matches as "
    "(ground-truth index, response index) pairs counted from 0 within that item's keypoint lists."
)


@dataclass(frozen=True)
class KeypointJudgement:
    """One item as the judge saw it: both keypoint lists, and which pairs it found equivalent.

    ``matches`` holds ``(reference index, predicted index)`` pairs, indices from 0 into
    ``reference`` (the ground-truth keypoints) and ``predicted`` (the response's keypoints).
    """

    item_id: str
    reference: tuple[str, ...]
    predicted: tuple[str, ...]
    matches: tuple[tuple[int, int], ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "reference", tuple(self.reference))
        object.__setattr__(self, "predicted", tuple(self.predicted))
        object.__setattr__(self, "matches", tuple(tuple(pair) for pair in self.matches))


@dataclass(frozen=True)
class ItemKeypointScores:
    """One item: whether it is correct, how much of the ground truth it covers, and the counts."""

    item_id: str
    correct: bool
    coverage: float
    reference_keypoints: int
    predicted_keypoints: int
    covered_keypoints: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item_id,
            "correct": self.correct,
            "coverage": self.coverage,
            "reference_keypoints": self.reference_keypoints,
            "predicted_keypoints": self.predicted_keypoints,
            "covered_keypoints": self.covered_keypoints,
        }


@dataclass(frozen=True)
class KeypointScores:
    """Correctness (share of correct items) and Coverage (mean per-item coverage)."""

    correctness: float
    coverage: float
    per_item: tuple[ItemKeypointScores, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "correctness": self.correctness,
            "coverage": self.coverage,
            "items": len(self.per_item),
            "per_item": [item.as_dict() for item in self.per_item],
        }


def keypoint_scores(judgements: Iterable[KeypointJudgement]) -> KeypointScores:
    """Correctness and Coverage over the judged items, in item-id order."""
    items = list(judgements)
    _check(items)
    per_item = tuple(_item_scores(item) for item in sorted(items, key=lambda item: item.item_id))
    return KeypointScores(
        correctness=sum(item.correct for item in per_item) / len(per_item),
        coverage=sum(item.coverage for item in per_item) / len(per_item),
        per_item=per_item,
    )


def _item_scores(item: KeypointJudgement) -> ItemKeypointScores:
    pairs = set(item.matches)
    covered = len({reference for reference, _ in pairs})
    paired = _one_to_one_pairs(pairs, len(item.reference), len(item.predicted))
    return ItemKeypointScores(
        item_id=item.item_id,
        correct=len(item.reference) == len(item.predicted) == paired,
        coverage=covered / len(item.reference),
        reference_keypoints=len(item.reference),
        predicted_keypoints=len(item.predicted),
        covered_keypoints=covered,
    )


def _one_to_one_pairs(pairs: set[tuple[int, int]], references: int, predictions: int) -> int:
    """The size of a maximum matching: ground-truth keypoints that get a response keypoint of their own."""
    if not pairs:
        return 0
    rows, columns = zip(*sorted(pairs))
    graph = csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(references, predictions))
    return int((maximum_bipartite_matching(graph, perm_type="column") >= 0).sum())


def _check(items: Sequence[KeypointJudgement]) -> None:
    problems = InputProblems("keypoint judgements")
    if not items:
        problems.add("empty judgement lists", "no item")
    seen: set[str] = set()
    for item in items:
        if item.item_id in seen:
            problems.add("items judged twice", item.item_id)
        seen.add(item.item_id)
        if not item.reference:
            problems.add("items without ground-truth keypoints", item.item_id)
        for pair in item.matches:
            if not _names_keypoints(pair, len(item.reference), len(item.predicted)):
                problems.add("matches naming a keypoint that does not exist", f"{item.item_id} {pair}")
    problems.raise_if_any(_HINT)


def _names_keypoints(pair: tuple[int, ...], references: int, predictions: int) -> bool:
    if len(pair) != 2 or any(isinstance(index, bool) or not isinstance(index, int) for index in pair):
        return False
    reference, predicted = pair
    return 0 <= reference < references and 0 <= predicted < predictions
