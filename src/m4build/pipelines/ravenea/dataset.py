"""The RAVENEA-shaped dataset folder: ``default`` (one row per image, with its ranked candidates and
grades) and ``corpus`` (the candidate articles), with a card, loadable with ``load_dataset``.

Candidates are listed in annotation order (a seeded shuffle), never in grade or score order: the
release stored them in grade order, which lets a retriever that gives every document the same score
look perfect under a stable sort. Grades come from ``annotations/judgments.parquet`` when the
annotations were imported, and are null before.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from m4build.dataset_folder import ConfigFiles, write_config

JUDGMENTS = Path("annotations") / "judgments.parquet"
SPLITS = ("train", "validation", "test")

FEATURES = datasets.Features(
    {
        "file_name": datasets.Value("string"),
        "image": datasets.Image(),
        "country": datasets.Value("string"),
        "category": datasets.Value("string"),
        "task_type": datasets.Value("string"),
        "split": datasets.Value("string"),
        "enwiki_ids": datasets.Sequence(datasets.Value("int64")),
        "culture_relevance": datasets.Sequence(datasets.Value("int32")),
        "bm25_ranks": datasets.Sequence(datasets.Value("int32")),
        "generate_caption": datasets.Value("string"),
        "caption_model": datasets.Value("string"),
        "caption_prompt_version": datasets.Value("string"),
        "question": datasets.Value("string"),
        "options": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("int32"),
        "human_captions": datasets.Sequence(datasets.Value("string")),
        "source": datasets.Value("string"),
    }
)


def grades(run: Path) -> dict[tuple[str, int], int]:
    """``(file_name, enwiki_id) -> culture_relevance`` from imported annotations, if any."""
    path = run / JUDGMENTS
    if not path.is_file():
        return {}
    table = pq.read_table(path, columns=["file_name", "enwiki_id", "culture_relevance"])
    return {(row["file_name"], row["enwiki_id"]): row["culture_relevance"] for row in table.to_pylist()}


def dataset_rows(run: Path, instances: pa.Table, candidates: pa.Table) -> list[dict[str, Any]]:
    """One row per image: its fields, its candidates in annotation order and their grades."""
    graded = grades(run)
    by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in candidates.to_pylist():
        by_image[row["file_name"]].append(row)
    rows = []
    for instance in instances.to_pylist():
        listed = sorted(by_image.get(instance["file_name"], []), key=lambda row: row["annotation_order"])
        ids = [row["enwiki_id"] for row in listed]
        rows.append(
            {
                "file_name": instance["file_name"],
                "image": {"bytes": (run / "images" / instance["file_name"]).read_bytes(), "path": instance["file_name"]},
                "country": instance["country"],
                "category": instance["category"],
                "task_type": instance["task_type"],
                "split": instance["split"],
                "enwiki_ids": ids,
                "culture_relevance": [graded.get((instance["file_name"], page)) for page in ids],
                "bm25_ranks": [row["bm25_rank"] for row in listed],
                "generate_caption": instance["generate_caption"],
                "caption_model": instance["caption_model"],
                "caption_prompt_version": instance["caption_prompt_version"],
                "question": instance["question"],
                "options": instance["options"],
                "answer": instance["answer"],
                "human_captions": instance["human_captions"],
                "source": instance["source"],
            }
        )
    return rows


def write_dataset(run: Path, instances: pa.Table, candidates: pa.Table, articles: pa.Table) -> list[ConfigFiles]:
    """Write the ``default`` config (one split per file set) and the ``corpus`` config."""
    rows = dataset_rows(run, instances, candidates)
    configs = []
    for split in SPLITS:
        chosen = [row for row in rows if row["split"] == split]
        if chosen:
            table = datasets.Dataset.from_list(chosen, features=FEATURES).data.table
            configs.append(write_config(run, "default", table, split=split))
    configs.append(write_config(run, "corpus", articles))
    return configs
