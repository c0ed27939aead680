"""``m4build annotate export ravenea``: the run's pairs as Label Studio tasks or CSV sheets.

Both formats carry the same tasks in the same order (by image, then ``annotation_order``), the pair
key that imports join on, and a copy of the written guidelines. Neither shows BM25 rank or score.

Label Studio (``--format label-studio``) writes ``tasks.json`` (import it in the project's Data
Manager), ``labeling_config.xml``, ``project.json`` (the same config with project settings, ready for
``POST /api/projects``) and ``guidelines.md``. CSV (``--format csv``) writes one sheet per annotator,
``annotator_01.csv`` ... ``annotator_NN.csv``, and ``guidelines.md``.

Images: Label Studio tasks point at ``/data/local-files/?d=images/<file>``, which Label Studio serves
when started with ``LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED=true`` and
``LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT=<absolute RUN path>`` and given a Local Files source storage
on ``<RUN>/images`` (annotation/ravenea/README.md walks through it). ``image_prefix`` replaces that
prefix, e.g. with ``http://localhost:8081/`` for a plain web server over ``RUN/images``. CSV sheets
hold the image's absolute path unless ``image_prefix`` is given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from m4build.annotation.ravenea import csv_io, label_studio
from m4build.annotation.ravenea.pairs import AnnotationTask, read_tasks
from m4build.errors import UsageError
from m4build.resources import data_path
from m4build.runs import atomic_write_text

FORMATS: tuple[str, ...] = ("label-studio", "csv")
GUIDELINES = "guidelines.md"


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote."""

    out: Path
    format: str
    files: tuple[Path, ...]
    tasks: int
    images: int
    annotators: int


def guidelines() -> str:
    """The written annotation guidelines shipped in ``annotation/ravenea/guidelines.md``."""
    return data_path("annotation", "ravenea", GUIDELINES).read_text(encoding="utf-8")


def export_tasks(
    run: Path,
    out: Path,
    *,
    format: str,
    annotators: int = 1,
    image_prefix: str | None = None,
) -> ExportResult:
    """Write the run's annotation tasks to ``out`` in ``format`` for ``annotators`` annotators."""
    if format not in FORMATS:
        raise UsageError(f"unknown export format {format!r}", f"Choose one of: {', '.join(FORMATS)}.")
    if annotators < 1:
        raise UsageError(f"--annotators must be at least 1, got {annotators}", "Pass --annotators 3, say.")
    tasks = read_tasks(run)
    if format == "label-studio":
        files = _write_label_studio(tasks, out, run.resolve().name, annotators, image_prefix)
    else:
        files = _write_csv(tasks, out, annotators, image_prefix)
    return ExportResult(
        out=out,
        format=format,
        files=files,
        tasks=len(tasks),
        images=len({task.pair.file_name for task in tasks}),
        annotators=annotators,
    )


def _write_label_studio(
    tasks: list[AnnotationTask], out: Path, run_name: str, annotators: int, image_prefix: str | None
) -> tuple[Path, ...]:
    prefix = label_studio.LOCAL_FILES_PREFIX if image_prefix is None else image_prefix
    payload = [
        label_studio.task_json(task, label_studio.image_url(task.pair.file_name, prefix)) for task in tasks
    ]
    written = {
        "tasks.json": json.dumps(payload, ensure_ascii=False, indent=1) + "\n",
        "labeling_config.xml": label_studio.labeling_config(),
        "project.json": json.dumps(
            label_studio.project_settings(f"RAVENEA {run_name}", annotators, guidelines()),
            ensure_ascii=False,
            indent=2,
        )
        + "\n",
        GUIDELINES: guidelines(),
    }
    for name, text in written.items():
        atomic_write_text(out / name, text)
    return tuple(out / name for name in written)


def _write_csv(
    tasks: list[AnnotationTask], out: Path, annotators: int, image_prefix: str | None
) -> tuple[Path, ...]:
    if image_prefix is None:
        images = [str(task.image_path.resolve()) for task in tasks]
    else:
        images = [label_studio.image_url(task.pair.file_name, image_prefix) for task in tasks]
    files = []
    for number in range(1, annotators + 1):
        name = f"annotator_{number:02d}"
        path = out / f"{name}.csv"
        atomic_write_text(path, csv_io.sheet_text(tasks, images, name))
        files.append(path)
    atomic_write_text(out / GUIDELINES, guidelines())
    return (*files, out / GUIDELINES)
