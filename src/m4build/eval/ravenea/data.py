"""A RAVENEA build folder as the evaluation reads it: images, captions, candidates, articles, grades."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from m4build.errors import InputFileError, UsageError


@dataclass(frozen=True)
class RaveneaData:
    root: Path
    instances: list[dict[str, Any]]
    candidates: dict[str, list[int]]  # file_name -> candidate page ids, in annotation order
    articles: dict[int, dict[str, Any]]
    judgments: dict[str, dict[str, int]]  # file_name -> page id (as text) -> grade

    def image(self, file_name: str) -> bytes:
        return (self.root / "images" / file_name).read_bytes()


def load_ravenea(root: Path, *, require_judgments: bool = True) -> RaveneaData:
    paths = {name: root / "data" / f"{name}.parquet" for name in ("instances", "candidates", "articles")}
    missing = [str(path) for path in paths.values() if not path.is_file()]
    if missing:
        raise InputFileError(
            f"{root} is not a finished RAVENEA build ({', '.join(missing)} missing).",
            f"Build it first: m4build build ravenea --out {root} ...",
        )
    candidates: dict[str, list[tuple[int, int]]] = {}
    for row in pq.read_table(paths["candidates"]).to_pylist():
        candidates.setdefault(row["file_name"], []).append((row["annotation_order"], row["enwiki_id"]))
    judged: dict[str, dict[str, int]] = {}
    judgments = root / "annotations" / "judgments.parquet"
    if judgments.is_file():
        for row in pq.read_table(judgments, columns=["file_name", "enwiki_id", "culture_relevance"]).to_pylist():
            judged.setdefault(row["file_name"], {})[str(row["enwiki_id"])] = int(row["culture_relevance"])
    elif require_judgments:
        raise UsageError(
            f"{root} has no imported annotations, so retrievers cannot be scored.",
            f"Export tasks with `m4build annotate export ravenea {root}`, then `m4build annotate import ravenea {root} FILES…`.",
        )
    return RaveneaData(
        root=root,
        instances=pq.read_table(paths["instances"]).to_pylist(),
        candidates={name: [page for _, page in sorted(pairs)] for name, pairs in candidates.items()},
        articles={row["enwiki_id"]: row for row in pq.read_table(paths["articles"]).to_pylist()},
        judgments=judged,
    )
