"""Scoring RAVENEA retrieval runs made elsewhere: a TREC run against graded judgments.

Reference: RAVENEA (Li et al.), ``yfyuan01/RAVENEA``, ``src/gdeval.py`` (``retrieval_eval``): a TREC
run (``query Q0 doc rank score tag``) is scored against the dataset's metadata JSONL (``file_name`` is
the query, ``enwiki_ids`` and ``culture_relevance`` the judged documents and their grades) and MRR,
P@1/3/5 and nDCG@1/3/5 are printed as percentages. The metrics, their ``parity`` mode (that script's
arithmetic) and the default that corrects it are :func:`m4build.metrics.graded_retrieval`; the strict
readers are :mod:`m4build.metrics.trec`.

This module adds what a command needs around them:

- judgments are read from RAVENEA metadata or from TREC qrels (``query iteration doc grade``),
  told apart by their content (a JSON object per line, or whitespace-separated fields), not their name;
- the queries scored: every judged query by default, so a run that forgot some is refused rather than
  averaged over fewer queries; with ``run_queries_only`` the queries the run ranks, which must all be
  judged (RAVENEA's metadata holds every split while a run covers one; ``gdeval.py`` silently scores
  the intersection instead);
- both modes can be scored from one read of the inputs, to print them side by side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m4build.errors import InputFileError, UsageError
from m4build.metrics import (
    GradedRetrievalScores,
    Judgments,
    Run,
    graded_retrieval,
    read_ravenea_qrels,
    read_run,
    read_trec_qrels,
)
from m4build.metrics.graded import DEFAULT_DEPTHS, MODES

BENCHMARK = "ravenea"
BOTH = "both"
RAVENEA_METADATA, TREC_QRELS = "ravenea-metadata", "trec-qrels"


def modes_for(mode: str) -> tuple[str, ...]:
    """``default``, ``parity``, or ``both`` (default first); anything else is a usage error."""
    if mode == BOTH:
        return MODES
    if mode not in MODES:
        raise UsageError(
            f"Unknown scoring mode {mode!r}.",
            "Use --mode default (corrected metrics), parity (RAVENEA's gdeval.py) or both.",
        )
    return (mode,)


def judgment_format(path: Path) -> str:
    """``ravenea-metadata`` when the first non-blank line is a JSON object, else ``trec-qrels``."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = next((line.strip() for line in handle if line.strip()), "")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(
            f"Cannot read {path}: {exc}", "Check the path, and that the file is UTF-8 text."
        ) from exc
    return RAVENEA_METADATA if first.startswith("{") else TREC_QRELS


def read_judgments(path: Path) -> tuple[Judgments, str]:
    """Graded judgments from RAVENEA metadata or TREC qrels, and which of the two the file was."""
    kind = judgment_format(path)
    return (read_ravenea_qrels(path) if kind == RAVENEA_METADATA else read_trec_qrels(path)), kind


@dataclass(frozen=True)
class RetrievalReport:
    """The scores of one run in each requested mode, and the inputs they came from."""

    scores: dict[str, GradedRetrievalScores]
    inputs: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": BENCHMARK,
            "modes": list(self.scores),
            "scores": {mode: scores.as_dict() for mode, scores in self.scores.items()},
            "inputs": self.inputs,
        }


def score_run(
    run: Run,
    judgments: Judgments,
    *,
    modes: Sequence[str] = ("default",),
    run_queries_only: bool = False,
    depths: Sequence[int] = DEFAULT_DEPTHS,
) -> dict[str, GradedRetrievalScores]:
    """MRR, P@k and nDCG@k in each of ``modes``, over the judged queries or the run's (module notes)."""
    queries = sorted(run) if run_queries_only else None
    return {
        mode: graded_retrieval(run, judgments, depths=depths, mode=mode, queries=queries) for mode in modes
    }


def score_ravenea(
    run_path: Path,
    qrels_path: Path,
    *,
    mode: str = "default",
    run_queries_only: bool = False,
    inputs: Mapping[str, Any] | None = None,
) -> RetrievalReport:
    """Read a TREC run and its judgments and score them in ``mode`` (``default``, ``parity`` or ``both``)."""
    modes = modes_for(mode)
    for path, flag in ((run_path, "--run"), (qrels_path, "--qrels")):
        if not path.is_file():
            raise UsageError(f"No such file: {path}", f"Check the path given to {flag}.")
    judgments, kind = read_judgments(qrels_path)
    scores = score_run(read_run(run_path), judgments, modes=modes, run_queries_only=run_queries_only)
    return RetrievalReport(
        scores=scores,
        inputs={
            "run": str(run_path),
            "qrels": str(qrels_path),
            "qrels_format": kind,
            "queries": "run" if run_queries_only else "judged",
            **(inputs or {}),
        },
    )
