"""Label Studio tasks out, Label Studio JSON exports in.

Formats, as Label Studio documents them (labelstud.io/guide/tasks "Basic Label Studio JSON format",
labelstud.io/guide/task_format "Label Studio JSON format of annotated tasks", labelstud.io/tags/choice):

- Import: a JSON list of tasks ``[{"data": {...}}, ...]``; the labeling config reads ``data`` keys
  through ``$key`` variables, extra keys are kept and come back in the export. A task ``id`` is not
  required and Label Studio assigns its own, so the join key travels inside ``data`` (``pair_key``).
- Images: an ``<Image value="$image">`` needs a URL. For files on the annotation server, Label Studio's
  local storage serves ``/data/local-files/?d=<path relative to LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT>``
  once ``LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED=true`` and a Local Files source storage covers the
  folder (labelstud.io/guide/storage_local, "Tasks with local storage file references").
- Export ("JSON", not "JSON-MIN"): the same list, each task with ``annotations``; an annotation has
  ``completed_by`` (the user id, or ``{"id", "email", "first_name", "last_name"}`` when the export
  expands it), ``was_cancelled`` (skipped) and ``result``: items ``{"from_name", "to_name",
  "type": "choices", "value": {"choices": [...]}}``. A ``<Choice alias="...">`` puts the alias, not
  the displayed value, into ``value.choices``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from m4build.annotation.ravenea.pairs import AnnotationTask
from m4build.annotation.ravenea.schema import QUESTIONS, Pair, PairJudgment, ParsedFile, normalize_answer
from m4build.errors import InputFileError
from m4build.resources import data_path

LOCAL_FILES_PREFIX = "/data/local-files/?d=images/"
"""Default image URL prefix: Label Studio local storage, document root set to the run folder."""

PROJECT_TITLE_LIMIT = 50  # Label Studio's PROJECT_TITLE_MAX_LEN
EXPORT_HINT = (
    "Export the project from Label Studio with Export > JSON (not JSON-MIN or CSV) and pass that file."
)


def labeling_config() -> str:
    """The labeling config XML shipped in ``annotation/ravenea/labeling_config.xml``."""
    return data_path("annotation", "ravenea", "labeling_config.xml").read_text(encoding="utf-8")


def image_url(file_name: str, prefix: str = LOCAL_FILES_PREFIX) -> str:
    """The URL Label Studio loads an image from: ``prefix`` + the URL-quoted file name."""
    return prefix + quote(file_name)


def task_json(task: AnnotationTask, image: str) -> dict[str, Any]:
    """One Label Studio task: the keys the labeling config shows, plus the keys imports join on."""
    return {
        "data": {
            "image": image,
            "image_country": task.country,
            "image_category": task.category,
            "caption": task.caption,
            "title": task.title,
            "article": task.text,
            "url": task.url,
            "pair_key": task.pair.key,
            "file_name": task.pair.file_name,
            "enwiki_id": task.pair.enwiki_id,
            "annotation_order": task.pair.annotation_order,
        }
    }


def project_settings(title: str, annotators: int, guidelines: str) -> dict[str, Any]:
    """Settings for Label Studio's create-project API (``POST /api/projects``; SDK ``projects.create``).

    ``maximum_annotations`` is how many annotators label each task before it counts as done; skipping
    and empty submissions are turned off because every pair needs all three answers.
    """
    return {
        "title": title[:PROJECT_TITLE_LIMIT],
        "description": "RAVENEA: is this Wikipedia article relevant to the culture shown in the image?",
        "label_config": labeling_config(),
        "expert_instruction": f'<pre style="white-space: pre-wrap">{html.escape(guidelines)}</pre>',
        "show_instruction": True,
        "show_skip_button": False,
        "enable_empty_annotation": False,
        "maximum_annotations": annotators,
    }


def read_export(path: Path, pairs: Mapping[str, Pair]) -> ParsedFile:
    """The pair judgments in a Label Studio JSON export, with every invalid record reported.

    A file that is not a JSON list of tasks raises ``InputFileError``; problems inside tasks (unknown
    pair, answer outside the allowed set, missing answers, no annotator) are collected in the result
    and the annotations that have them are left out.
    """
    parsed = ParsedFile(path)
    try:
        payload = json.loads(path.read_bytes())
    except json.JSONDecodeError as error:
        raise InputFileError(
            f"{path} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})", EXPORT_HINT
        ) from error
    except UnicodeDecodeError as error:
        raise InputFileError(f"{path} is not UTF-8 JSON ({error})", EXPORT_HINT) from error
    if not isinstance(payload, list):
        raise InputFileError(
            f"{path} holds a JSON {type(payload).__name__}, not the list of tasks Label Studio exports",
            EXPORT_HINT,
        )
    if any(isinstance(task, dict) and "data" not in task and "pair_key" in task for task in payload):
        raise InputFileError(
            f"{path} looks like a JSON-MIN export, which drops who annotated what", EXPORT_HINT
        )
    for index, task in enumerate(payload):
        _read_task(task, index, pairs, parsed)
    return parsed


def _read_task(task: object, index: int, pairs: Mapping[str, Pair], parsed: ParsedFile) -> None:
    where = f"task {task.get('id', '?')} (item {index})" if isinstance(task, dict) else f"item {index}"
    data = task.get("data") if isinstance(task, dict) else None
    if not isinstance(data, dict):
        parsed.problems.add("tasks without a data object", where)
        return
    key = data.get("pair_key")
    if not isinstance(key, str):
        parsed.problems.add("tasks without a pair_key (not exported by m4build)", where)
        return
    pair = pairs.get(key)
    if pair is None:
        parsed.problems.add("unknown (image, article) pairs", f"{where}: {key}")
        return
    annotations = task.get("annotations", [])
    if not isinstance(annotations, list):
        parsed.problems.add("tasks whose annotations are not a list", where)
        return
    if not annotations:
        parsed.notes["tasks without annotations"] += 1
    for number, annotation in enumerate(annotations):
        if not isinstance(annotation, dict):
            parsed.problems.add("annotations that are not JSON objects", f"{where}, annotation {number}")
            continue
        locator = f"{where}, annotation {annotation.get('id', number)}"
        if annotation.get("was_cancelled"):
            parsed.notes["skipped (cancelled) annotations"] += 1
            continue
        judgment = _read_annotation(annotation, pair, locator, parsed)
        if judgment is not None:
            parsed.judgments.append(judgment)


def annotator_name(completed_by: object) -> str | None:
    """Who made an annotation: the e-mail when the export expanded ``completed_by``, else the user id."""
    if isinstance(completed_by, dict):
        email = completed_by.get("email")
        if isinstance(email, str) and email.strip():
            return email.strip()
        completed_by = completed_by.get("id")
    if isinstance(completed_by, int) and not isinstance(completed_by, bool):
        return f"label-studio-user-{completed_by}"
    if isinstance(completed_by, str) and completed_by.strip():
        return completed_by.strip()
    return None


def _read_annotation(
    annotation: dict[str, Any], pair: Pair, locator: str, parsed: ParsedFile
) -> PairJudgment | None:
    """One annotation's three answers, or None after reporting what is wrong with it."""
    problems: list[tuple[str, str]] = []
    annotator = annotator_name(annotation.get("completed_by"))
    if annotator is None:
        problems.append(("annotations without completed_by", locator))
    result = annotation.get("result")
    if not isinstance(result, list):
        problems.append(("annotations without a result list", locator))
        result = []
    answers: dict[str, str] = {}
    attempted: set[str] = set()
    for item in result:
        question = item.get("from_name") if isinstance(item, dict) else None
        if question not in QUESTIONS:
            parsed.notes["results of other controls (ignored)"] += 1
            continue
        value = item.get("value")
        choices = value.get("choices") if isinstance(value, dict) else None
        if question in attempted:
            problems.append(("questions answered twice in one annotation", f"{locator}: {question}"))
        elif item.get("type") != "choices" or not isinstance(choices, list) or len(choices) != 1:
            problems.append(
                ("results that are not exactly one choice", f"{locator}: {question} = {choices!r}")
            )
        elif (answer := normalize_answer(choices[0])) is None:
            problems.append(
                ("answers outside yes/no/cannot_determine", f"{locator}: {question} = {choices[0]!r}")
            )
        else:
            answers[question] = answer
        attempted.add(question)
    missing = [question for question in QUESTIONS if question not in attempted]
    if missing:
        problems.append(("annotations with missing answers", f"{locator}: no {', '.join(missing)}"))
    for kind, example in problems:
        parsed.problems.add(kind, example)
    if problems or annotator is None:
        return None
    return PairJudgment(annotator=annotator, pair=pair, answers=answers, record=locator)
