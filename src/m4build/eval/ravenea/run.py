"""One RAVENEA evaluation: a retriever's run over the annotated candidates, its scores in both the
official script's way and the corrected way, and optionally the downstream tasks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from m4build.eval.ravenea.data import load_ravenea
from m4build.eval.ravenea.downstream import downstream
from m4build.eval.ravenea.retrievers import run_retriever
from m4build.llm.model import LanguageModel
from m4build.metrics.graded import graded_retrieval
from m4build.metrics.trec import Run
from m4build.runs import atomic_write_json, atomic_write_text, utc_now

DEPTHS = (1, 3, 5)
MODES = ("parity", "default")


def evaluate_ravenea(
    root: Path,
    out: Path,
    *,
    retriever: str,
    dense_model: str,
    tasks: Sequence[str] = (),
    model: LanguageModel | None = None,
) -> dict[str, Any]:
    data = load_ravenea(root)
    run, described = run_retriever(data, retriever, dense_model=dense_model)
    scores: dict[str, Any] = {"build": str(root), "retriever": described, "queries": len(run), "generated": utc_now()}
    scores["retrieval"] = {
        mode: graded_retrieval(run, data.judgments, depths=DEPTHS, mode=mode, queries=set(run)).as_dict()
        for mode in MODES
    }
    if tasks:
        assert model is not None, "the CLI opens a model when downstream tasks are asked for"
        scores["downstream"] = downstream(model, data, run, tasks)
        scores["model_usage"] = model.usage()
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "run.trec", trec_lines(run, described["retriever"]))
    atomic_write_json(out / "scores.json", scores)
    return scores


def trec_lines(run: Run, tag: str) -> str:
    safe_tag = tag.replace(" ", "_").replace("/", "_")
    return "".join(
        f"{query} Q0 {doc.doc_id} {doc.rank} {doc.score:.6f} {safe_tag}\n"
        for query in sorted(run)
        for doc in run[query]
    )
