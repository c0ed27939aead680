"""What retrieval does to each answer: paired runs without and with RAG, and the judge's relevance scores.

Accuracy with RAG minus accuracy without hides two opposite movements: answers RAG breaks and answers
RAG fixes. M4-RAG (Anugraha et al., 2025, arXiv:2512.05959) reports them separately, from two runs of
the same model on the same items:

- **correctness retention**: of the items answered correctly without RAG, the share still correct
  with RAG (``retained / (retained + lost)``);
- **correction rate**: of the items answered wrongly without RAG, the share RAG makes correct
  (``corrected / (corrected + still_wrong)``);

and plots both against the mean relevance a VLM judge gave the retrieved passages (1-5 per passage,
rubric in ``davidanugraha/M4-RAG`` ``src/inference/misc/prompt_templates.py``,
``construct_eval_rag_prompt``; schema ``EvalRAGResponse`` in ``src/inference/misc/dataset_schema.py``).

M4-RAG's released code (``src/evaluation/eval_wc.py``) computes neither rate; its "confusion matrix"
crosses prediction correctness with whether the gold answer *string* occurs in the retrieved chunks,
and it scores a missing response as a wrong answer (``MAGIC_WRONG_ANSWER``). There is therefore no
``parity`` mode here: the rates follow the paper's definitions, and runs whose item ids differ are
refused (``MetricInputError`` with counts and examples) instead of being scored as wrong.

A rate whose denominator is empty (no item was correct without RAG, say) is ``None``, not 0: it is
undefined, and a bin of the judge-score plot may well be empty.
"""

from __future__ import annotations

import math
import numbers
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from m4build.metrics.checks import InputProblems, MetricInputError

JUDGE_SCALE: tuple[int, int] = (1, 5)
# Bins with integer edges, as the paper's figures group mean judge scores: [1, 2), [2, 3), [3, 4), [4, 5].
INTEGER_JUDGE_BINS: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0, 5.0)

_PAIRED_HINT = (
    "Pass one True/False per item id for each run, over the same items (e.g. "
    "{g.item_id: g.correct for g in score_choices(...).items}); rerun or drop the items missing from one run."
)
_JUDGE_HINT = "Give one judge score from 1 to 5 per (item, passage); rerun the judge on the rows listed."


@dataclass(frozen=True)
class RagEffect:
    """How answers moved between the run without RAG and the run with RAG."""

    retained: int  # correct without RAG, correct with RAG
    lost: int  # correct without, wrong with
    corrected: int  # wrong without, correct with
    still_wrong: int  # wrong without, wrong with

    @property
    def n(self) -> int:
        return self.retained + self.lost + self.corrected + self.still_wrong

    @property
    def retention(self) -> float | None:
        """Share of the items correct without RAG that stay correct with RAG (None: no such item)."""
        return _share(self.retained, self.retained + self.lost)

    @property
    def correction(self) -> float | None:
        """Share of the items wrong without RAG that RAG makes correct (None: no such item)."""
        return _share(self.corrected, self.corrected + self.still_wrong)

    @property
    def accuracy_without_rag(self) -> float | None:
        return _share(self.retained + self.lost, self.n)

    @property
    def accuracy_with_rag(self) -> float | None:
        return _share(self.retained + self.corrected, self.n)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "retained": self.retained,
            "lost": self.lost,
            "corrected": self.corrected,
            "still_wrong": self.still_wrong,
            "retention": self.retention,
            "correction": self.correction,
            "accuracy_without_rag": self.accuracy_without_rag,
            "accuracy_with_rag": self.accuracy_with_rag,
        }


@dataclass(frozen=True)
class JudgeScore:
    """The judge's 1-5 relevance score of one retrieved passage for one item."""

    item_id: str
    passage_id: str
    score: float


@dataclass(frozen=True)
class JudgeSummary:
    """An item's judge scores over its retrieved passages."""

    item_id: str
    mean: float
    max: float
    count: int

    def as_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "mean": self.mean, "max": self.max, "count": self.count}


@dataclass(frozen=True)
class JudgeBin:
    """Items whose mean judge score lies in ``[low, high)`` (``[low, high]`` for the last bin)."""

    low: float
    high: float
    includes_high: bool
    effect: RagEffect

    @property
    def label(self) -> str:
        return f"[{self.low:g}, {self.high:g}{']' if self.includes_high else ')'}"

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "low": self.low, "high": self.high, **self.effect.as_dict()}


@dataclass(frozen=True)
class RagEffectByJudgeScore:
    """Retention and correction overall and per bin of mean judge score (M4-RAG's figures)."""

    overall: RagEffect
    bins: tuple[JudgeBin, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"overall": self.overall.as_dict(), "bins": [judge_bin.as_dict() for judge_bin in self.bins]}


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


# --- paired correctness --------------------------------------------------------------------------


def _as_correctness(value: object) -> bool | None:
    """True/False, also as a NumPy bool (pandas hands those out); None for anything else."""
    if isinstance(value, bool):
        return value
    if getattr(getattr(value, "dtype", None), "kind", None) == "b":
        return bool(value)
    return None


def _check_run(run: Mapping[str, object], label: str, problems: InputProblems) -> dict[str, bool]:
    checked = {}
    for item_id, value in run.items():
        correctness = _as_correctness(value)
        if correctness is None:
            problems.add(f"items whose correctness {label} is not True/False", f"{item_id!r}: {value!r}")
        else:
            checked[item_id] = correctness
    return checked


def _check_same_items(
    problems: InputProblems, left: Collection[str], right: Collection[str], left_label: str, right_label: str
) -> None:
    for item_id in sorted(set(left) - set(right), key=str):
        problems.add(f"items only {left_label}", repr(item_id))
    for item_id in sorted(set(right) - set(left), key=str):
        problems.add(f"items only {right_label}", repr(item_id))


def _checked_runs(
    without_rag: Mapping[str, object], with_rag: Mapping[str, object]
) -> tuple[dict[str, bool], dict[str, bool]]:
    if not without_rag and not with_rag:
        raise MetricInputError("Cannot compare runs without and with RAG: both are empty.", _PAIRED_HINT)
    problems = InputProblems("paired runs without and with RAG")
    before = _check_run(without_rag, "without RAG", problems)
    after = _check_run(with_rag, "with RAG", problems)
    _check_same_items(problems, without_rag, with_rag, "in the run without RAG", "in the run with RAG")
    problems.raise_if_any(_PAIRED_HINT)
    return before, after


def _tally(item_ids: Iterable[str], before: Mapping[str, bool], after: Mapping[str, bool]) -> RagEffect:
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for item_id in item_ids:
        counts[before[item_id], after[item_id]] += 1
    return RagEffect(
        retained=counts[True, True],
        lost=counts[True, False],
        corrected=counts[False, True],
        still_wrong=counts[False, False],
    )


def rag_effect(without_rag: Mapping[str, bool], with_rag: Mapping[str, bool]) -> RagEffect:
    """Correctness retention and correction rate of RAG, from per-item correctness of two runs.

    Both mappings go from item id to whether that run answered it correctly, and must cover the same
    items; anything else raises ``MetricInputError`` listing the items only in one run.
    """
    before, after = _checked_runs(without_rag, with_rag)
    return _tally(before, before, after)


# --- judge scores --------------------------------------------------------------------------------


def _judge_score_problem(row: JudgeScore) -> str | None:
    """What is wrong with one judge score, or None."""
    score = row.score
    if not isinstance(row.item_id, str) or not row.item_id.strip():
        return "scores without an item id"
    if score is None or (isinstance(score, numbers.Real) and math.isnan(score)):
        return "missing scores"
    if not isinstance(score, numbers.Real) or isinstance(score, bool):
        return "scores that are not numbers"
    if not JUDGE_SCALE[0] <= score <= JUDGE_SCALE[1]:
        return f"scores outside {JUDGE_SCALE[0]}..{JUDGE_SCALE[1]}"
    return None


def summarize_judge_scores(scores: Iterable[JudgeScore]) -> dict[str, JudgeSummary]:
    """Per item: mean, max and count of the judge's 1-5 scores over its passages (keys sorted).

    Missing (None/NaN), non-numeric or out-of-range scores and two scores for the same (item,
    passage) raise ``MetricInputError``: a duplicate would silently weigh one passage twice.
    """
    rows = list(scores)
    if not rows:
        raise MetricInputError("Cannot summarize judge scores: none were given.", _JUDGE_HINT)
    problems = InputProblems("judge scores")
    by_item: dict[str, list[float]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for row in rows:
        problem = _judge_score_problem(row)
        if problem is None and (row.item_id, row.passage_id) in seen:
            problem = "duplicate (item, passage) scores"
        if problem is None:
            seen.add((row.item_id, row.passage_id))
            by_item[row.item_id].append(float(row.score))
        else:
            problems.add(problem, f"{row.item_id!r}/{row.passage_id!r}: {row.score!r}")
    problems.raise_if_any(_JUDGE_HINT)
    return {
        item_id: JudgeSummary(
            item_id=item_id,
            mean=math.fsum(by_item[item_id]) / len(by_item[item_id]),
            max=max(by_item[item_id]),
            count=len(by_item[item_id]),
        )
        for item_id in sorted(by_item)
    }


def _check_edges(edges: Sequence[float]) -> None:
    finite = all(isinstance(edge, numbers.Real) and math.isfinite(edge) for edge in edges)
    if len(edges) < 2 or not finite or any(low >= high for low, high in pairwise(edges)):
        raise MetricInputError(
            f"Cannot bin judge scores with edges {list(edges)!r}.",
            "Give at least two finite, strictly increasing edges, e.g. (1, 2, 3, 4, 5).",
        )


def _bin_index(mean: float, edges: Sequence[float]) -> int | None:
    if mean == edges[-1]:
        return len(edges) - 2
    index = bisect_right(edges, mean) - 1
    return index if 0 <= index < len(edges) - 1 else None


def rag_effect_by_judge_score(
    without_rag: Mapping[str, bool],
    with_rag: Mapping[str, bool],
    judge_scores: Iterable[JudgeScore],
    *,
    edges: Sequence[float] = INTEGER_JUDGE_BINS,
) -> RagEffectByJudgeScore:
    """Retention and correction per bin of the items' mean judge score, as M4-RAG's figures plot them.

    Bins are ``[edges[i], edges[i+1])``, the last one closed. Every paired item needs judge scores and
    every judged item must be in the runs; a mean outside the edges is refused rather than dropped.
    """
    _check_edges(edges)
    before, after = _checked_runs(without_rag, with_rag)
    summaries = summarize_judge_scores(judge_scores)
    problems = InputProblems("judge scores against the paired runs")
    _check_same_items(problems, before, summaries, "in the runs (no judge score)", "with judge scores")
    members: list[list[str]] = [[] for _ in edges[1:]]
    for item_id, summary in summaries.items():
        index = _bin_index(summary.mean, edges)
        if index is None:
            problems.add("items whose mean judge score is outside the bins", f"{item_id!r}: {summary.mean:g}")
        else:
            members[index].append(item_id)
    problems.raise_if_any(_JUDGE_HINT + " Bins must span every item's mean score.")
    bins = tuple(
        JudgeBin(
            low=float(edges[index]),
            high=float(edges[index + 1]),
            includes_high=index == len(edges) - 2,
            effect=_tally(item_ids, before, after),
        )
        for index, item_ids in enumerate(members)
    )
    return RagEffectByJudgeScore(overall=_tally(before, before, after), bins=bins)
