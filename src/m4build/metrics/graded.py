"""Graded retrieval metrics for RAVENEA: MRR, P@k and nDCG@k over culture-relevance grades −3..3.

Reference: RAVENEA (Li et al., ICLR 2026), ``src/gdeval.py`` in yfyuan01/RAVENEA (functions
``ndcg``, ``precision_at_k``, ``mean_reciprocal_rank``, ``compute_metrics``), which says it is
adapted from TREC's ``gdeval.pl`` (TREC 2010 Web track, version 1.2). The three definitions:

=================  ==========================  ==============================  ===========================
                   TREC ``gdeval.pl``          RAVENEA ``gdeval.py``           ours
                                               (``mode="parity"``)             (``mode="default"``)
=================  ==========================  ==============================  ===========================
ranking order      score, ties by docno        rank column, ties in file       score, ties by lower doc
                   descending                  order                           id
gain               2^g − 1 (only g > 0 kept)   2^(g+3) − 1                     2^(g+3) − 1 if judged
unjudged document  gain 0                      grade 0, gain 7                 gain 0
ideal DCG          all positive judgments      the retrieved list, re-sorted   all judgments
no positive grade  topic left out              nDCG still scored               nDCG still scored
=================  ==========================  ==============================  ===========================

All three discount position ``i`` (from 0) by log(i + 2); gdeval.pl's natural log cancels in the ratio.

Why the default differs. RAVENEA's ideal DCG is built from the documents the run retrieved, with
unjudged ones given grade 0 (gain 7), so a ranking of documents nobody judged is its own ideal and
scores nDCG = 1.0, and a relevant candidate the run never returned costs nothing. Its ranking comes
from the rank column, which ``src/inference.py`` writes after a stable sort over candidates stored in
grade order, so a retriever that scores everything the same looks perfect. The default ranks by
score with ties broken by document id, gives unjudged documents no gain, and builds the ideal DCG
from every judgment of the query (as gdeval.pl does). It keeps RAVENEA's shifted gain, so the modes
agree on the runs RAVENEA was made for: every judged candidate ranked, with distinct scores and a
rank column that follows them, and at least k of them (10 candidates per image, k up to 5).

Relevance for MRR and P@k (both modes, RAVENEA's definition): a document is relevant when it has
the query's highest grade and that grade is positive; a query whose best grade is 0 or below has no
relevant document. MRR is 1/position of the first relevant document in the whole ranking (0 when
none is retrieved); queries without a relevant document are left out of its mean in both modes, as
RAVENEA does.
P@k in ``parity`` divides by the number of documents in the top k (so a run returning one correct
document has P@5 = 1.0) and scores queries without a relevant document 0, counted in the mean; the
default divides by k (``trec_eval``'s P_k) and leaves those queries out, like gdeval.pl.

Each mean is over the queries where the value is defined (``None`` per query means undefined: no
relevant document, or for default nDCG every judgment graded −3).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from m4build.errors import UsageError
from m4build.metrics.checks import InputProblems, check_same_ids
from m4build.metrics.trec import (
    RankedDoc,
    checked_depths,
    find_run_problems,
    rank_by_rank_column,
    rank_by_score,
)

Mode = Literal["default", "parity"]
MODES: tuple[str, ...] = ("default", "parity")
LOWEST_GRADE, HIGHEST_GRADE = -3, 3  # RAVENEA: three annotation dimensions, each −1, 0 or +1
DEFAULT_DEPTHS = (1, 3, 5)  # RAVENEA reports P@1, P@3, P@5 and nDCG@1, nDCG@3, nDCG@5

_HINT = (
    "Score one ranking per judged query: pass queries=... to score a subset (e.g. one split), and "
    f"keep grades within {LOWEST_GRADE}..{HIGHEST_GRADE}."
)


@dataclass(frozen=True)
class QueryGradedScores:
    """One query's values; ``None`` where the metric is undefined for it."""

    query_id: str
    reciprocal_rank: float | None
    precision: dict[int, float | None]
    ndcg: dict[int, float | None]

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query_id, **_named(self.reciprocal_rank, self.precision, self.ndcg)}


@dataclass(frozen=True)
class GradedRetrievalScores:
    """Means over the queries where each value is defined, and every query's values."""

    mode: str
    depths: tuple[int, ...]
    mrr: float | None
    precision: dict[int, float | None]
    ndcg: dict[int, float | None]
    queries: int
    queries_without_relevant: int
    per_query: tuple[QueryGradedScores, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            **_named(self.mrr, self.precision, self.ndcg),
            "queries": self.queries,
            "queries_without_relevant": self.queries_without_relevant,
            "per_query": [scores.as_dict() for scores in self.per_query],
        }


def relevant_documents(grades: Mapping[str, int]) -> frozenset[str]:
    """The documents RAVENEA counts as relevant: those with the query's highest grade, if positive."""
    best = max(grades.values(), default=0)
    if best <= 0:
        return frozenset()
    return frozenset(doc for doc, grade in grades.items() if grade == best)


def graded_retrieval(
    run: Mapping[str, Sequence[RankedDoc]],
    judgments: Mapping[str, Mapping[str, int]],
    *,
    depths: Iterable[int] = DEFAULT_DEPTHS,
    mode: Mode = "default",
    queries: Collection[str] | None = None,
) -> GradedRetrievalScores:
    """MRR, P@k and nDCG@k of ``run`` against graded ``judgments`` (see the module docstring).

    ``queries`` are the queries to score (default: every judged query); the run must rank exactly
    those.
    """
    if mode not in MODES:
        raise UsageError(f"Unknown graded-metric mode {mode!r}.", f"Use one of: {', '.join(MODES)}.")
    cutoffs = checked_depths(depths)
    scored = sorted(set(judgments) if queries is None else set(queries))
    _check_inputs(run, judgments, scored)
    per_query = tuple(_score_query(query, run[query], judgments[query], cutoffs, mode) for query in scored)
    return GradedRetrievalScores(
        mode=mode,
        depths=cutoffs,
        mrr=_mean(scores.reciprocal_rank for scores in per_query),
        precision={k: _mean(scores.precision[k] for scores in per_query) for k in cutoffs},
        ndcg={k: _mean(scores.ndcg[k] for scores in per_query) for k in cutoffs},
        queries=len(per_query),
        queries_without_relevant=sum(1 for query in scored if not relevant_documents(judgments[query])),
        per_query=per_query,
    )


def _score_query(
    query: str, docs: Sequence[RankedDoc], grades: Mapping[str, int], depths: tuple[int, ...], mode: str
) -> QueryGradedScores:
    ranking = rank_by_rank_column(docs) if mode == "parity" else rank_by_score(docs)
    relevant = relevant_documents(grades)
    return QueryGradedScores(
        query_id=query,
        reciprocal_rank=_reciprocal_rank(ranking, relevant),
        precision={k: _precision(ranking, relevant, k, mode) for k in depths},
        ndcg={k: _ndcg(ranking, grades, k, mode) for k in depths},
    )


def _reciprocal_rank(ranking: list[str], relevant: frozenset[str]) -> float | None:
    if not relevant:
        return None
    for position, doc in enumerate(ranking, start=1):
        if doc in relevant:
            return 1.0 / position
    return 0.0


def _precision(ranking: list[str], relevant: frozenset[str], k: int, mode: str) -> float | None:
    top = set(ranking[:k])
    if mode == "parity":
        return len(top & relevant) / len(top) if relevant else 0.0
    return len(top & relevant) / k if relevant else None


def _gain(grade: int) -> float:
    return 2.0 ** (grade - LOWEST_GRADE) - 1.0


def _dcg(gains: Iterable[float]) -> float:
    return sum(gain / math.log2(position + 2) for position, gain in enumerate(gains))


def _ndcg(ranking: list[str], grades: Mapping[str, int], k: int, mode: str) -> float | None:
    if mode == "parity":
        retrieved = [grades.get(doc, 0) for doc in ranking]
        ideal = _dcg(_gain(grade) for grade in sorted(retrieved, reverse=True)[:k])
        return _dcg(_gain(grade) for grade in retrieved[:k]) / ideal if ideal else 0.0
    ideal = _dcg(sorted((_gain(grade) for grade in grades.values()), reverse=True)[:k])
    gains = (_gain(grades[doc]) if doc in grades else 0.0 for doc in ranking[:k])
    return _dcg(gains) / ideal if ideal else None


def _mean(values: Iterable[float | None]) -> float | None:
    defined = [value for value in values if value is not None]
    return sum(defined) / len(defined) if defined else None


def _named(
    reciprocal_rank: float | None, precision: dict[int, float | None], ndcg: dict[int, float | None]
) -> dict[str, float | None]:
    named: dict[str, float | None] = {"MRR": reciprocal_rank}
    named.update({f"P@{k}": value for k, value in precision.items()})
    named.update({f"nDCG@{k}": value for k, value in ndcg.items()})
    return named


def _check_inputs(
    run: Mapping[str, Sequence[RankedDoc]], judgments: Mapping[str, Mapping[str, int]], scored: list[str]
) -> None:
    check_same_ids("graded rankings", run, scored, _HINT)
    problems = InputProblems("graded rankings")
    if not scored:
        problems.add("empty query sets", "no judged query")
    for query in scored:
        grades = judgments.get(query)
        if not grades:
            problems.add("queries without judgments", query)
            continue
        for doc, grade in sorted(grades.items()):
            if not LOWEST_GRADE <= grade <= HIGHEST_GRADE:
                problems.add(f"grades outside {LOWEST_GRADE}..{HIGHEST_GRADE}", f"{query}/{doc}={grade}")
    find_run_problems(run, problems)
    problems.raise_if_any(_HINT)
