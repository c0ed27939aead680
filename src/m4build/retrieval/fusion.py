"""Ranking helpers shared by every search mode: deterministic top-k and reciprocal-rank fusion.

Ties are broken by passage id, never by the order a library happened to return them in
(DESIGN.md, principle 5), so the same index gives the same ranking on every machine.

Hybrid search fuses the dense and BM25 rankings with reciprocal-rank fusion (Cormack, Clarke and
Büttcher, SIGIR 2009): score(d) = sum over rankings of 1 / (rrf_k + rank(d)), ranks from 1, with
rrf_k = 60 as in the paper. RRF uses ranks only, so it needs no calibration between cosine
similarities and BM25 scores, whose scales have nothing in common.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RRF_K = 60


def ordered(candidates: Sequence[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    """The ``k`` best ``(id, score)`` pairs: higher score first, then lower passage id."""
    return sorted(candidates, key=lambda pair: (-pair[1], pair[0]))[:k]


def top_k_scores(
    scores: np.ndarray, ids: Sequence[str], k: int, *, positive_only: bool
) -> list[tuple[str, float]]:
    """The top ``k`` of a full score vector, tie-broken by id, including every tie at the cut-off.

    ``positive_only`` drops passages with score 0 (for BM25: no query token in the passage).
    """
    if len(scores) == 0 or k <= 0:
        return []
    cut = np.partition(scores, len(scores) - min(k, len(scores)))[len(scores) - min(k, len(scores))]
    keep = scores >= cut
    if positive_only:
        keep &= scores > 0
    rows = np.flatnonzero(keep)
    return ordered([(ids[row], float(scores[row])) for row in rows], k)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], k: int, rrf_k: int = RRF_K
) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first) into the top ``k`` ``(id, rrf score)`` pairs."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, passage in enumerate(ranking, start=1):
            fused[passage] = fused.get(passage, 0.0) + 1.0 / (rrf_k + rank)
    return ordered(list(fused.items()), k)
