"""What annotators judge: the run folder's (image, article) pairs, with everything shown to them.

Reads the three tables ``m4build build ravenea`` writes (``notes/ravenea_contract.md``). Tasks come
out grouped by image (images sorted by file name) and, within an image, in ``annotation_order``:
the seeded shuffle made for annotators. BM25 rank and score are never shown and never used for
order, so that the retriever's opinion cannot anchor the human one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from m4build.annotation.ravenea.schema import Pair
from m4build.errors import InputFileError
from m4build.metrics.checks import EXAMPLES_SHOWN

BUILD_HINT = "Build the run first with `m4build build ravenea --out RUN`, or pass the right RUN folder."

CANDIDATE_COLUMNS = ("file_name", "enwiki_id", "annotation_order")
INSTANCE_COLUMNS = ("file_name", "country", "category", "generate_caption")
ARTICLE_COLUMNS = ("enwiki_id", "title", "text", "url")


@dataclass(frozen=True)
class AnnotationTask:
    """One pair with what the annotator sees: the image, its caption and the article."""

    pair: Pair
    image_path: Path
    country: str
    category: str
    caption: str
    title: str
    text: str
    url: str


def _read_table(run: Path, name: str, columns: Sequence[str]) -> pa.Table:
    path = run / "data" / name
    if not path.is_file():
        raise InputFileError(f"{path} is missing: {run} is not a finished RAVENEA run folder", BUILD_HINT)
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as error:
        raise InputFileError(f"{path} is not a readable parquet file ({error})", BUILD_HINT) from error
    missing = [column for column in columns if column not in schema.names]
    if missing:
        raise InputFileError(f"{path} lacks the column(s) {', '.join(missing)}", BUILD_HINT)
    return pq.read_table(path, columns=list(columns))


def read_pairs(run: Path) -> dict[str, Pair]:
    """Every candidate pair of the run, by pair key: what imported labels may refer to."""
    rows = _read_table(run, "candidates.parquet", CANDIDATE_COLUMNS).to_pylist()
    pairs = [Pair(row["file_name"], int(row["enwiki_id"]), int(row["annotation_order"])) for row in rows]
    return {pair.key: pair for pair in pairs}


def _examples(values: Sequence[object]) -> str:
    return ", ".join(str(value) for value in values[:EXAMPLES_SHOWN])


def read_tasks(run: Path) -> list[AnnotationTask]:
    """Every pair with its image, caption and article text, in the order annotators see them."""
    pairs = sorted(read_pairs(run).values(), key=lambda p: (p.file_name, p.annotation_order, p.enwiki_id))
    instances = {
        row["file_name"]: row for row in _read_table(run, "instances.parquet", INSTANCE_COLUMNS).to_pylist()
    }
    articles = {
        int(row["enwiki_id"]): row
        for row in _read_table(run, "articles.parquet", ARTICLE_COLUMNS).to_pylist()
    }

    no_instance = sorted({p.file_name for p in pairs if p.file_name not in instances})
    no_article = sorted({p.enwiki_id for p in pairs if p.enwiki_id not in articles})
    no_image = sorted({p.file_name for p in pairs if not (run / "images" / p.file_name).is_file()})
    problems = []
    if no_instance:
        problems.append(
            f"{len(no_instance)} image(s) not in instances.parquet (e.g. {_examples(no_instance)})"
        )
    if no_article:
        problems.append(
            f"{len(no_article)} article(s) not in articles.parquet (e.g. {_examples(no_article)})"
        )
    if no_image:
        problems.append(f"{len(no_image)} image file(s) missing under images/ (e.g. {_examples(no_image)})")
    if problems:
        raise InputFileError(
            f"{run / 'data' / 'candidates.parquet'} refers to " + "; ".join(problems),
            "Rerun `m4build build ravenea` on this folder to finish it; it resumes where it stopped.",
        )

    tasks = []
    for pair in pairs:
        instance, article = instances[pair.file_name], articles[pair.enwiki_id]
        tasks.append(
            AnnotationTask(
                pair=pair,
                image_path=run / "images" / pair.file_name,
                country=instance["country"] or "",
                category=instance["category"] or "",
                caption=instance["generate_caption"] or "",
                title=article["title"],
                text=article["text"],
                url=article["url"],
            )
        )
    return tasks
