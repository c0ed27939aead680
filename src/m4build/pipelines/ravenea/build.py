"""The RAVENEA build: images -> dedup -> cultural captions -> BM25 candidates -> splits -> dataset.

Every step is a pure function of the inputs and the recipe except the captions, which come from the
model layer's cache after the first run; so a killed build is rerun with the same command and
redoes only unanswered captions, and a build rerun after ``m4build annotate import`` rewrites the
dataset with the grades.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from m4build import __version__
from m4build.dataset_card import RAVENEA_CARD, render_card
from m4build.dataset_folder import ConfigFiles
from m4build.llm.model import LanguageModel
from m4build.llm.prompts import load_prompt
from m4build.pipelines.ravenea.candidates import find_candidates
from m4build.pipelines.ravenea.captions import CAPTION_PROMPT, Caption, caption_images
from m4build.pipelines.ravenea.dataset import write_dataset
from m4build.pipelines.ravenea.dedup import Dropped, deduplicate
from m4build.pipelines.ravenea.inputs import ImageInstance
from m4build.pipelines.ravenea.splits import stratified_splits
from m4build.progress import NullProgress, ProgressReporter
from m4build.runs import (
    RunFolder,
    atomic_write_bytes,
    atomic_write_parquet,
    atomic_write_text,
    package_versions,
    utc_now,
)
from m4build.sources.wikipedia.base import WikipediaSource

INSTANCES = Path("data") / "instances.parquet"
CANDIDATES = Path("data") / "candidates.parquet"
ARTICLES = Path("data") / "articles.parquet"
FAILURES = "failures.jsonl"
PACKAGES = ("m4build", "bm25s", "pillow", "openai", "google-genai", "datasets", "pyarrow")

INSTANCE_SCHEMA = pa.schema(
    [
        ("file_name", pa.string()),
        ("image_sha256", pa.string()),
        ("country", pa.string()),
        ("category", pa.string()),
        ("task_type", pa.string()),
        ("source", pa.string()),
        ("generate_caption", pa.string()),
        ("caption_model", pa.string()),
        ("caption_prompt", pa.string()),
        ("caption_prompt_version", pa.string()),
        ("caption_error", pa.string()),
        ("question", pa.string()),
        ("options", pa.list_(pa.string())),
        ("answer", pa.int32()),
        ("human_captions", pa.list_(pa.string())),
        ("split", pa.string()),
    ]
)


@dataclass
class RaveneaJob:
    run: RunFolder
    instances: Sequence[ImageInstance]
    model: LanguageModel
    source: WikipediaSource
    source_info: Mapping[str, Any]
    recipe: Mapping[str, Any]
    source_datasets: Sequence[str] = ()


@dataclass
class RaveneaResult:
    root: Path
    resumed: bool
    counts: dict[str, int]
    dropped: list[Dropped]
    caption_failures: list[Caption]
    configs: list[ConfigFiles]


def build_ravenea(job: RaveneaJob, progress: ProgressReporter | None = None) -> RaveneaResult:
    progress = progress or NullProgress()
    run, recipe = job.run, job.recipe
    prompt = load_prompt(CAPTION_PROMPT)
    resumed = run.claim(_settings(job, prompt.provenance))
    run.clean_temp_files()
    kept, dropped = deduplicate(job.instances, int(recipe["near_duplicate_distance"]))
    _write_images(run.root, kept)
    captions = caption_images(job.model, prompt, kept, progress)
    found = find_candidates(job.source, captions, k=int(recipe["k"]), seed=int(recipe["seed"]), progress=progress)
    splits = stratified_splits([(i.file_name, i.country) for i in kept], recipe["splits"], int(recipe["seed"]))
    instances = _instances_table(kept, captions, splits)
    atomic_write_parquet(run.root / INSTANCES, instances)
    atomic_write_parquet(run.root / CANDIDATES, found.candidates)
    atomic_write_parquet(run.root / ARTICLES, found.articles)
    failures = [
        *({"kind": d.reason, "file_name": d.file_name, "detail": d.detail} for d in dropped),
        *({"kind": "caption", "file_name": c.file_name, "detail": c.error} for c in captions if c.error),
        *({"kind": "missing-article", "detail": detail} for detail in found.missing),
    ]
    atomic_write_text(run.root / FAILURES, "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in failures))
    counts = {
        "inputs": len(job.instances),
        "images": len(kept),
        "dropped": len(dropped),
        "captions": sum(1 for c in captions if c.text),
        "caption_failures": sum(1 for c in captions if c.error),
        "candidates": found.candidates.num_rows,
        "articles": found.articles.num_rows,
    }
    configs = refresh_dataset(run.root, _manifest(job, prompt.provenance, counts, dropped, failures))
    return RaveneaResult(
        run.root, resumed, counts, dropped, [c for c in captions if c.error], configs
    )


def refresh_dataset(root: Path, manifest: dict[str, Any] | None = None) -> list[ConfigFiles]:
    """(Re)write the dataset configs, the manifest's row counts and the card from the run's tables,
    picking up imported annotations; ``m4build annotate import`` calls this after each import."""
    path = root / "manifest.json"
    manifest = manifest or json.loads(path.read_text(encoding="utf-8"))
    instances, candidates, articles = (pq.read_table(root / p) for p in (INSTANCES, CANDIDATES, ARTICLES))
    configs = write_dataset(root, instances, candidates, articles)
    rows: Counter[str] = Counter()
    for config in configs:
        rows[config.name] += config.rows
    graded = (root / "annotations" / "judgments.parquet").is_file()
    manifest = {**manifest, "configs": dict(rows), "annotated": graded}
    manifest["facts"] = {**manifest.get("facts", {}), "annotated": "yes" if graded else "not yet"}
    atomic_write_text(path, json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    atomic_write_text(root / "README.md", render_card(manifest, configs))
    return configs


def _settings(job: RaveneaJob, prompt: Mapping[str, str]) -> dict[str, Any]:
    digest = hashlib.sha256()
    for instance in sorted(job.instances, key=lambda i: i.file_name):
        digest.update(instance.file_name.encode() + b"\0" + hashlib.sha256(instance.image).digest())
    config = job.model.config
    return {
        "command": "build ravenea",
        "inputs": digest.hexdigest()[:16],
        "model": [config.provider, config.model, config.generation_parameters()],
        "prompt": dict(prompt),
        "source": dict(job.source_info),
        "recipe": {key: job.recipe[key] for key in ("k", "seed", "splits", "near_duplicate_distance")},
    }


def _write_images(root: Path, instances: Sequence[ImageInstance]) -> None:
    for instance in instances:
        path = root / "images" / instance.file_name
        if not path.is_file() or path.read_bytes() != instance.image:
            atomic_write_bytes(path, instance.image)


def _instances_table(
    instances: Sequence[ImageInstance], captions: Sequence[Caption], splits: Mapping[str, str]
) -> pa.Table:
    rows = []
    for instance, caption in zip(instances, captions):
        rows.append(
            {
                "file_name": instance.file_name,
                "image_sha256": hashlib.sha256(instance.image).hexdigest(),
                "country": instance.country,
                "category": instance.category,
                "task_type": instance.task_type,
                "source": instance.source,
                "generate_caption": caption.text,
                "caption_model": caption.provenance.get("model"),
                "caption_prompt": caption.provenance.get("prompt"),
                "caption_prompt_version": caption.provenance.get("prompt_version"),
                "caption_error": caption.error,
                "question": instance.question,
                "options": list(instance.options) if instance.options else None,
                "answer": instance.answer,
                "human_captions": list(instance.human_captions) if instance.human_captions else None,
                "split": splits[instance.file_name],
            }
        )
    return pa.Table.from_pylist(rows, schema=INSTANCE_SCHEMA)


def _manifest(
    job: RaveneaJob,
    prompt: Mapping[str, str],
    counts: Mapping[str, int],
    dropped: Sequence[Dropped],
    failures: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    config = job.model.config
    return {
        "m4build_version": __version__,
        "card": RAVENEA_CARD,
        "command": "build ravenea",
        "settings": _settings(job, prompt),
        "counts": dict(counts),
        "dropped": dict(Counter(d.reason for d in dropped)),
        "failures": {"count": len(failures), "file": FAILURES},
        "caption_model": config.describe(),
        "caption_prompt": {**prompt},
        "llm_usage": job.model.usage(),
        "source": dict(job.source_info),
        "source_datasets": list(job.source_datasets),
        "facts": {
            "images": f"{counts['images']} after dedup of {counts['inputs']} ({len(dropped)} dropped)",
            "captions": f"{counts['captions']} by {config.provider}/{config.model}, prompt {prompt['prompt']} v{prompt['prompt_version']}",
            "candidates": f"BM25 top {job.recipe['k']} over {job.source_info.get('kind', 'a snapshot')} ({counts['articles']} articles)",
            "splits": f"{dict(job.recipe['splits'])}, seed {job.recipe['seed']}, stratified by country",
        },
        "versions": package_versions(PACKAGES),
        "finished": utc_now(),
    }
