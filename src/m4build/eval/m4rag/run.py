"""One evaluation: images, contexts, predictions per setting, judge scores, scores and report.

Each setting's predictions live in a folder named by a hash of everything that decides them —
dataset and items, setting, model and its generation parameters, prompt versions, the index
manifest, k and the retrieval encoder — so an identical finished run is reused and a changed one
gets a new folder. Predictions are written in atomic units as they arrive: killed and rerun, no
item is evaluated twice (answers already received come back from the model cache for free) and
none is lost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from m4build import __version__
from m4build.eval.m4rag.contexts import ContextBuilder, EvalPrompts, MultimodalRetriever
from m4build.eval.m4rag.images import ImageStore
from m4build.eval.m4rag.items import EvalItem
from m4build.eval.m4rag.judge import judge_contexts
from m4build.eval.m4rag.predict import ItemContext, inference_request, prediction_record, records_table
from m4build.eval.m4rag.report import write_report
from m4build.eval.m4rag.retrieval import TextRetriever
from m4build.eval.m4rag.scores import compute_scores
from m4build.eval.m4rag.settings import Setting
from m4build.llm.model import LanguageModel
from m4build.llm.prompts import load_prompt
from m4build.progress import NullProgress, ProgressReporter
from m4build.runs import (
    RunFolder,
    atomic_write_json,
    atomic_write_parquet,
    package_versions,
    stable_hash,
    utc_now,
)

STEP = "predict"
PREDICTIONS = "predictions.parquet"
JUDGEMENTS = "judge.parquet"
FLUSH_EVERY_ROWS = 32
FLUSH_EVERY_S = 10.0
PACKAGES = ("m4build", "openai", "google-genai", "faiss-cpu", "sentence-transformers", "transformers", "torch")


@dataclass
class EvalModels:
    inference: LanguageModel
    auxiliary: LanguageModel  # captions, oracle captions, translations
    judge: LanguageModel | None = None

    def usage(self) -> dict[str, Any]:
        usage: dict[str, Any] = {}
        for model in {id(m): m for m in (self.inference, self.auxiliary, self.judge) if m}.values():
            usage.update(model.usage()["models"])
        return usage


@dataclass
class EvalJob:
    dataset: str
    settings: Sequence[Setting]
    items: Sequence[EvalItem]
    models: EvalModels
    images: ImageStore
    out: Path
    index: str | None = None
    k: int = 5
    retrieval_mode: str | None = "dense"
    multimodal: MultimodalRetriever | None = None


@dataclass
class SettingRun:
    setting: Setting
    folder: Path
    reused: bool
    predictions: list[dict[str, Any]] = field(default_factory=list)
    judge_rows: list[dict[str, Any]] = field(default_factory=list)


def load_eval_prompts() -> EvalPrompts:
    return EvalPrompts(
        inference=load_prompt("m4rag/inference"),
        translate=load_prompt("m4rag/translate"),
        caption=load_prompt("m4rag/caption"),
        oracle_caption=load_prompt("m4rag/oracle_caption"),
        judge=load_prompt("m4rag/judge"),
    )


def run_evaluation(job: EvalJob, progress: ProgressReporter | None = None) -> list[SettingRun]:
    """Evaluate every setting of ``job``; returns each setting's predictions and judge rows."""
    progress = progress or NullProgress()
    job.out.mkdir(parents=True, exist_ok=True)
    prompts = load_eval_prompts()
    images = job.images.resolve(job.items, progress)
    needs_index = any(s.context == "retrieved" and s.query != "multimodal" for s in job.settings)
    text_retriever = TextRetriever(job.index, k=job.k, mode=job.retrieval_mode) if needs_index and job.index else None
    builder = ContextBuilder(
        job.items,
        images,
        job.models.auxiliary,
        prompts,
        job.out / "artefacts",
        text_retriever=text_retriever,
        multimodal_retriever=job.multimodal,
        progress=progress,
    )
    runs = []
    for setting in job.settings:
        folder = job.out / f"{setting.name}-{setting_hash(job, setting, prompts, text_retriever)}"
        run = SettingRun(setting, folder, reused=_finished(folder))
        if not run.reused:
            contexts = builder.for_setting(setting)
            try:
                _predict(job, setting, contexts, images, prompts, folder, progress)
                if job.models.judge is not None and setting.is_rag:
                    _judge(job, setting, contexts, images, prompts, folder, progress)
            finally:  # stopped by the budget or Ctrl-C too: what was answered is written and described
                _write_predictions(RunFolder(folder), folder, job.items)
                _write_setting_manifest(job, setting, folder, builder)
        run.predictions = pq.read_table(folder / PREDICTIONS).to_pylist()
        if (folder / JUDGEMENTS).is_file():
            run.judge_rows = pq.read_table(folder / JUDGEMENTS).to_pylist()
        runs.append(run)
    return runs


def setting_hash(job: EvalJob, setting: Setting, prompts: EvalPrompts, retriever: TextRetriever | None) -> str:
    """The name of a setting's folder: a hash of everything that decides its predictions."""
    inference = job.models.inference.config
    parts: dict[str, Any] = {
        "dataset": job.dataset,
        "setting": setting.name,
        "items": stable_hash([[i.item_id, i.question, list(i.options), i.gold_option] for i in job.items]),
        "model": [inference.provider, inference.model, inference.generation_parameters()],
        "inference_prompt": prompts.inference.provenance,
    }
    if setting.multilingual_prompt or setting.multilingual_context or setting.query in ("caption", "oracle"):
        auxiliary = job.models.auxiliary.config
        parts["auxiliary"] = [auxiliary.provider, auxiliary.model, auxiliary.generation_parameters()]
        parts["auxiliary_prompts"] = [p.provenance for p in (prompts.translate, prompts.caption, prompts.oracle_caption)]
    if setting.context == "retrieved":
        parts["k"] = job.k
        if setting.query == "multimodal" and job.multimodal is not None:
            parts["retriever"] = job.multimodal.describe()
        elif retriever is not None:
            parts["index"] = [stable_hash(retriever.manifest), job.retrieval_mode]
    if job.models.judge is not None and setting.is_rag:
        judge = job.models.judge.config
        parts["judge"] = [judge.provider, judge.model, judge.generation_parameters(), prompts.judge.provenance]
    return stable_hash(parts, length=12)


def _finished(folder: Path) -> bool:
    manifest = folder / "manifest.json"
    if not manifest.is_file() or not (folder / PREDICTIONS).is_file():
        return False
    return json.loads(manifest.read_text(encoding="utf-8")).get("status") == "complete"


def _predict(
    job: EvalJob,
    setting: Setting,
    contexts: Mapping[str, ItemContext],
    images: Mapping[str, bytes],
    prompts: EvalPrompts,
    folder: Path,
    progress: ProgressReporter,
) -> None:
    run = RunFolder(folder)
    run.claim({"setting": setting.name, "folder": folder.name})
    run.clean_temp_files()
    done = _done_ids(run)
    todo = [item for item in job.items if item.item_id not in done]
    buffer: list[dict[str, Any]] = []
    last_flush = time.monotonic()

    def flush() -> None:
        nonlocal last_flush
        if buffer:
            run.write_unit(STEP, f"{time.time_ns():020d}", records_table(buffer))
            buffer.clear()
        last_flush = time.monotonic()

    failed_early = [item for item in todo if contexts[item.item_id].error]
    buffer.extend(prediction_record(setting.name, i, contexts[i.item_id], None, prompts.inference) for i in failed_early)
    answerable = [item for item in todo if not contexts[item.item_id].error]
    requests = (
        inference_request(prompts.inference, item, contexts[item.item_id], images[item.item_id]) for item in answerable
    )
    with progress.task(f"{setting.name}", total=len(todo)) as advance:
        advance(len(failed_early))
        try:
            for index, generation in job.models.inference.generate_many(requests):
                item = answerable[index]
                buffer.append(prediction_record(setting.name, item, contexts[item.item_id], generation, prompts.inference))
                advance(1)
                if len(buffer) >= FLUSH_EVERY_ROWS or time.monotonic() - last_flush > FLUSH_EVERY_S:
                    flush()
        finally:
            flush()


def _done_ids(run: RunFolder) -> set[str]:
    table = run.read_units(STEP)
    return set(table.column("item_id").to_pylist()) if table is not None else set()


def _write_predictions(run: RunFolder, folder: Path, items: Sequence[EvalItem]) -> None:
    """One row per item, in item order, from every unit written so far."""
    table = run.read_units(STEP)
    latest = {row["item_id"]: row for row in (table.to_pylist() if table is not None else [])}
    rows = [latest[item.item_id] for item in items if item.item_id in latest]
    atomic_write_parquet(folder / PREDICTIONS, records_table(rows))


def _judge(
    job: EvalJob,
    setting: Setting,
    contexts: Mapping[str, ItemContext],
    images: Mapping[str, bytes],
    prompts: EvalPrompts,
    folder: Path,
    progress: ProgressReporter,
) -> None:
    """Judge every context passage the model was given (the oracle context counts as one)."""
    by_id = {item.item_id: item for item in job.items}
    pairs = []
    for item_id, context in sorted(contexts.items()):
        if context.error:
            continue
        ids = [p.id for p in context.passages] or [f"oracle:{item_id}"] * len(context.texts)
        pairs += [(by_id[item_id], passage_id, text) for passage_id, text in zip(ids, context.texts)]
    assert job.models.judge is not None
    judge_contexts(job.models.judge, prompts.judge, pairs, images, folder / JUDGEMENTS, progress)


def _write_setting_manifest(job: EvalJob, setting: Setting, folder: Path, builder: ContextBuilder) -> None:
    rows = pq.read_table(folder / PREDICTIONS).select(["item_id", "error"]).to_pylist()
    errors = sum(1 for row in rows if row["error"])
    complete = len(rows) == len(job.items)
    atomic_write_json(
        folder / "manifest.json",
        {
            "m4build_version": __version__,
            "command": "eval m4rag",
            "dataset": job.dataset,
            "setting": setting.name,
            "description": setting.description,
            "items": len(job.items),
            "predictions": len(rows),
            "failed": errors,
            "english_only_retrieval": len(builder.english_only.get(setting.name, [])),
            "artefact_failures": builder.artefact_errors,
            "models": {
                "inference": job.models.inference.config.describe(),
                "auxiliary": job.models.auxiliary.config.describe(),
                "judge": job.models.judge.config.describe() if job.models.judge else None,
            },
            "k": job.k if setting.context == "retrieved" else None,
            "index": job.index if setting.context == "retrieved" and setting.query != "multimodal" else None,
            "multimodal": job.multimodal.describe() if setting.query == "multimodal" and job.multimodal else None,
            "usage": job.models.usage(),
            "versions": package_versions(PACKAGES),
            "finished": utc_now(),
            "status": "complete" if complete else "incomplete",
        },
    )


def write_outputs(job: EvalJob, runs: Sequence[SettingRun], *, mode: str = "default") -> dict[str, Any]:
    """The run's top-level predictions.parquet, scores.json and report.md with plots."""
    atomic_write_parquet(job.out / PREDICTIONS, records_table([row for run in runs for row in run.predictions]))
    options = {item.item_id: item.options for item in job.items}
    scores = compute_scores(
        {run.setting.name: run.predictions for run in runs},
        {run.setting.name: run.judge_rows for run in runs if run.judge_rows},
        mode=mode,
        options=options,
    )
    for run in runs:  # items searched in English alone because the index lacks their language
        manifest = json.loads((run.folder / "manifest.json").read_text(encoding="utf-8"))
        scores["settings"][run.setting.name]["english_only_retrieval"] = manifest.get("english_only_retrieval", 0)
    inference = job.models.inference.config
    header = {
        "dataset": job.dataset,
        "model": f"{inference.provider}/{inference.model}",
        "items": len(job.items),
        "k": job.k,
        "index": job.index,
        "settings": ", ".join(f"{run.setting.name} ({run.folder.name}{', reused' if run.reused else ''})" for run in runs),
        "parse mode": mode,
        "generated": utc_now(),
    }
    scores = {"header": header, **scores}
    atomic_write_json(job.out / "scores.json", scores)
    write_report(job.out, scores, header)
    return scores
