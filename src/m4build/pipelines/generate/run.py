"""Run one prompt over many rows, resumably, within a budget.

Results are written in atomic parquet units as they arrive, so a kill loses at most the last
unflushed few, and those cost nothing to redo: their answers are in the model layer's cache. A
rerun skips the rows already written. When ``--max-cost`` would be crossed, or the user presses
Ctrl-C, the results in hand are written before the run stops, and the manifest says what is left.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from m4build import __version__
from m4build.llm.model import Generation, GenerationRequest, LanguageModel
from m4build.llm.prompts import PromptTemplate
from m4build.llm.structured import OutputSchema
from m4build.pipelines.generate.rows import PromptRow
from m4build.progress import NullProgress, ProgressReporter
from m4build.runs import RunFolder, atomic_write_parquet, package_versions, stable_hash, utc_now

STEP = "generate"
OUTPUT_FILE = "generations.parquet"
FLUSH_EVERY_ROWS = 64
FLUSH_EVERY_S = 10.0
PACKAGES = ("m4build", "openai", "google-genai", "pydantic", "jinja2", "pyarrow")

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("output", pa.string()),  # JSON of the validated answer (a JSON string when there is no schema)
        ("raw_text", pa.string()),
        ("error", pa.string()),
        ("cached", pa.bool_()),
        ("attempts", pa.int32()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("finish_reason", pa.string()),
        ("provider", pa.string()),
        ("model", pa.string()),
        ("served_model", pa.string()),
        ("prompt", pa.string()),
        ("prompt_version", pa.string()),
        ("prompt_sha256", pa.string()),
        ("generated_at", pa.string()),
    ]
)


@dataclass
class GenerateJob:
    """A prompt, its rows, the model and the run folder."""

    prompt: PromptTemplate
    rows: Sequence[PromptRow]
    model: LanguageModel
    run: RunFolder
    input_path: Path
    schema: OutputSchema | None = None


@dataclass
class GenerateResult:
    root: Path
    resumed: bool
    counts: dict[str, int]
    usage: Mapping[str, Any]
    stopped: str | None = None  # why the run stopped early, if it did
    failures: list[dict[str, str]] = field(default_factory=list)


def run_generation(job: GenerateJob, progress: ProgressReporter | None = None) -> GenerateResult:
    """Generate for every row not yet done, flushing results as they come."""
    progress = progress or NullProgress()
    run = job.run
    resumed = run.claim(settings_of(job))
    run.clean_temp_files()
    done = _done_ids(run)
    todo = [row for row in job.rows if row.id not in done]
    started = utc_now()
    buffer: list[dict[str, Any]] = []
    last_flush = time.monotonic()
    stopped: str | None = None

    def flush() -> None:
        nonlocal last_flush
        if buffer:
            run.write_unit(STEP, f"{time.time_ns():020d}", pa.Table.from_pylist(buffer, schema=SCHEMA))
            buffer.clear()
        last_flush = time.monotonic()

    requests = (_request(job, row) for row in todo)
    with progress.task(f"generate {job.prompt.name}", total=len(todo)) as advance:
        try:
            for index, generation in job.model.generate_many(requests):
                buffer.append(_record(todo[index].id, generation))
                advance(1)
                if len(buffer) >= FLUSH_EVERY_ROWS or time.monotonic() - last_flush > FLUSH_EVERY_S:
                    flush()
        except BaseException as error:
            flush()
            stopped = type(error).__name__
            _finish(job, started, resumed, stopped)
            raise
    flush()
    return _finish(job, started, resumed, stopped)


def settings_of(job: GenerateJob) -> dict[str, Any]:
    """What binds a run folder: another prompt, model, schema or input is another run."""
    described = job.model.config.describe()
    return {
        "command": "generate",
        "prompt": job.prompt.provenance,
        "model": {name: described[name] for name in ("provider", "model")},
        "generation": job.model.config.generation_parameters(),
        "schema": dict(job.schema.json_schema) if job.schema else None,
        "input": stable_hash([[row.id, row.variables, [str(p) for p in row.image_paths]] for row in job.rows]),
    }


def _request(job: GenerateJob, row: PromptRow) -> GenerationRequest:
    return GenerationRequest(tuple(job.prompt.render(row.variables, row.images())), job.schema, job.prompt)


def _record(row_id: str, generation: Generation) -> dict[str, Any]:
    provenance = generation.provenance
    return {
        "id": row_id,
        "output": json.dumps(generation.value_as_json(), ensure_ascii=False) if generation.ok else None,
        "raw_text": generation.text,
        "error": generation.error,
        "cached": generation.cached,
        "attempts": generation.attempts,
        "input_tokens": generation.input_tokens,
        "output_tokens": generation.output_tokens,
        "cost_usd": generation.cost_usd,
        "finish_reason": generation.finish_reason,
        "provider": provenance.get("provider"),
        "model": provenance.get("model"),
        "served_model": provenance.get("served_model"),
        "prompt": provenance.get("prompt"),
        "prompt_version": provenance.get("prompt_version"),
        "prompt_sha256": provenance.get("prompt_sha256"),
        "generated_at": utc_now(),
    }


def _done_ids(run: RunFolder) -> set[str]:
    """Rows with a successful result; failed rows are tried again on a rerun."""
    table = run.read_units(STEP)
    if table is None:
        return set()
    return {row["id"] for row in table.select(["id", "error"]).to_pylist() if row["error"] is None}


def _final_table(run: RunFolder, order: Sequence[str]) -> pa.Table:
    """One row per id, the latest attempt winning, in input order."""
    table = run.read_units(STEP)
    latest: dict[str, dict[str, Any]] = {}
    for record in table.to_pylist() if table is not None else []:
        latest[record["id"]] = record  # units are read in time order
    return pa.Table.from_pylist([latest[row_id] for row_id in order if row_id in latest], schema=SCHEMA)


def _finish(job: GenerateJob, started: str, resumed: bool, stopped: str | None) -> GenerateResult:
    run = job.run
    table = _final_table(run, [row.id for row in job.rows])
    atomic_write_parquet(run.data_dir / OUTPUT_FILE, table)
    errors = [record for record in table.select(["id", "error"]).to_pylist() if record["error"] is not None]
    counts = {
        "rows": len(job.rows),
        "generated": table.num_rows - len(errors),
        "failed": len(errors),
        "remaining": len(job.rows) - table.num_rows,
    }
    usage = job.model.usage()
    attempt = {"started": started, "finished": utc_now(), "stopped": stopped, "counts": counts, "usage": usage}
    run.log_attempt(attempt)
    spent = sum(value or 0.0 for value in table.column("cost_usd").to_pylist())
    run.write_manifest(
        {
            "m4build_version": __version__,
            "command": "generate",
            "settings": settings_of(job),
            "model": job.model.config.describe(),
            "prompt": {**job.prompt.provenance, "source": job.prompt.source},
            "input": str(job.input_path),
            "counts": counts,
            "cost_usd_total": round(spent, 6),
            "attempts": run.attempts(),
            "versions": package_versions(PACKAGES),
            "status": "complete" if counts["remaining"] == 0 and not errors else "incomplete",
        }
    )
    failures = [{"id": record["id"], "error": record["error"]} for record in errors]
    return GenerateResult(run.root, resumed, counts, usage, stopped, failures)
