"""Texts a model writes for the evaluation itself: captions, oracle captions and translations.

They are inputs of later steps (a caption becomes a retrieval query, a translated instruction a
prompt), so they are made once per key through ``m4build.llm`` (cached, budgeted), stored as a
table in the run folder that can be reviewed and published, and each row records the model and
prompt version that wrote it. A key the model failed on is recorded with its error; the items
that need it are then reported as failed, never given an empty text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from m4build.llm.messages import ImagePart
from m4build.llm.model import GenerationRequest, LanguageModel
from m4build.llm.prompts import PromptTemplate
from m4build.progress import NullProgress, ProgressReporter
from m4build.runs import atomic_write_parquet
from m4build.text.reasoning import strip_reasoning

SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("text", pa.string()),
        ("error", pa.string()),
        ("variables", pa.string()),
        ("model", pa.string()),
        ("prompt", pa.string()),
        ("prompt_version", pa.string()),
        ("prompt_sha256", pa.string()),
    ]
)


@dataclass(frozen=True)
class ArtefactRequest:
    """One text to write: its key, the prompt variables and any image."""

    key: str
    variables: Mapping[str, Any]
    image: bytes | None = None


@dataclass(frozen=True)
class Artefacts:
    """Texts by key, and the keys that failed with why."""

    texts: dict[str, str]
    errors: dict[str, str]


def make_artefacts(
    kind: str,
    folder: Path,
    model: LanguageModel,
    prompt: PromptTemplate,
    requests: Sequence[ArtefactRequest],
    progress: ProgressReporter | None = None,
) -> Artefacts:
    """Write ``folder/{kind}.parquet`` with one row per distinct key (cache hits cost nothing)."""
    progress = progress or NullProgress()
    unique = list({request.key: request for request in requests}.values())
    generation_requests = (
        GenerationRequest.from_prompt(
            prompt, request.variables, images=[ImagePart.from_bytes(request.image)] if request.image else ()
        )
        for request in unique
    )
    rows: dict[int, dict[str, Any]] = {}
    with progress.task(kind, total=len(unique)) as advance:
        for index, generation in model.generate_many(generation_requests):
            request = unique[index]
            text = strip_reasoning(generation.text) if generation.ok else None
            error = generation.error or (None if text else "the model answered with an empty text")
            rows[index] = {
                "key": request.key,
                "text": text if error is None else None,
                "error": error,
                "variables": json.dumps(dict(request.variables), ensure_ascii=False, sort_keys=True),
                "model": model.name,
                **prompt.provenance,
            }
            advance(1)
    table = pa.Table.from_pylist([rows[index] for index in sorted(rows)], schema=SCHEMA)
    atomic_write_parquet(folder / f"{kind}.parquet", table)
    return Artefacts(
        texts={row["key"]: row["text"] for row in rows.values() if row["error"] is None},
        errors={row["key"]: row["error"] for row in rows.values() if row["error"] is not None},
    )

