"""The images a RAVENEA build starts from, with their country and category.

Two kinds of input: CVQA rows (``afaji/cvqa`` or local files; their images are embedded, with a
question, options and answer for the cVQA task), and any folder of images described by a CSV or
JSONL file (CCUB, or a collection of one's own) with at least ``file_name``, ``country`` and
``category``. Every row is checked up front; a row naming a missing image is reported with the
others, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m4build.errors import InputFileError
from m4build.languages import load_languages
from m4build.sources.benchmarks import Row, load_items, read_table, text

TASKS = ("cVQA", "cIC")
REQUIRED = ("file_name", "country", "category")


@dataclass(frozen=True)
class ImageInstance:
    """One image and what the dataset says about it."""

    file_name: str
    image: bytes = field(repr=False)
    country: str
    category: str
    task_type: str  # "cVQA" or "cIC"
    source: str  # "cvqa", "ccub" or "folder"
    question: str | None = None
    options: tuple[str, ...] | None = None
    answer: int | None = None  # 0-based
    human_captions: tuple[str, ...] | None = None


def read_image_folder(folder: Path, metadata: Path, *, source: str = "folder") -> list[ImageInstance]:
    """Instances from ``metadata`` (CSV or JSONL) whose ``file_name`` are files under ``folder``."""
    rows = read_table(metadata)
    if not rows:
        raise InputFileError(f"{metadata} holds no rows.", "List one image per row with file_name, country, category.")
    missing_columns = [name for name in REQUIRED if name not in rows[0].data]
    if missing_columns:
        raise InputFileError(
            f"{metadata} lacks column(s) {', '.join(missing_columns)}.",
            f"RAVENEA metadata needs {', '.join(REQUIRED)}; optional: task_type, question, options, answer, human_captions.",
        )
    instances, problems = [], []
    for row in rows:
        instance = _instance(folder, row, source, problems)
        if instance is not None:
            instances.append(instance)
    if problems:
        shown = "; ".join(problems[:3])
        raise InputFileError(f"{len(problems)} row(s) of {metadata} cannot be used: {shown}.", "Fix or remove those rows.")
    return instances


def _instance(folder: Path, row: Row, source: str, problems: list[str]) -> ImageInstance | None:
    data = row.data
    name = text(data["file_name"])
    path = folder / name
    if not name or not path.is_file():
        problems.append(f"{row.origin}: image {name!r} is not in {folder}")
        return None
    task = text(data.get("task_type")) or ("cVQA" if text(data.get("question")) else "cIC")
    if task not in TASKS:
        problems.append(f"{row.origin}: task_type {task!r} is not one of {', '.join(TASKS)}")
        return None
    options = _list(data.get("options"))
    answer = data.get("answer")
    return ImageInstance(
        file_name=name,
        image=path.read_bytes(),
        country=text(data["country"]),
        category=text(data["category"]),
        task_type=task,
        source=text(data.get("source")) or source,
        question=text(data.get("question")) or None,
        options=tuple(options) if options else None,
        answer=int(answer) if answer not in (None, "") else None,
        human_captions=tuple(_list(data.get("human_captions"))) or None,
    )


def _list(value: Any) -> list[str]:
    """A list cell: a list, a JSON list as text, or one string (a single caption)."""
    if value in (None, ""):
        return []
    if isinstance(value, str) and value.strip().startswith("["):
        value = json.loads(value)
    if isinstance(value, str):
        return [value]
    return [text(item) for item in value]


def cvqa_instances(source: Any, languages: Sequence[str]) -> list[ImageInstance]:
    """CVQA rows with an embedded image, as cVQA instances (question and options in English)."""
    registry = load_languages()
    subset_codes = {tuple(lang.cvqa_subset): lang.code for lang in registry.all("cvqa") if lang.cvqa_subset}
    items = load_items("cvqa", list(languages), source=source, subset_codes=subset_codes, images=True)
    instances = []
    for item in items:
        choice = item.choice
        if choice is None or not choice.image:
            continue
        english = bool(item.question_en) and len(choice.options_en) == len(choice.options)
        instances.append(
            ImageInstance(
                file_name=f"cvqa_{item.extra['cvqa_id']}.jpg",
                image=choice.image,
                country=item.extra.get("country", ""),
                category=item.extra.get("category", ""),
                task_type="cVQA",
                source="cvqa",
                question=item.question_en if english else item.question,
                options=choice.options_en if english else choice.options,
                answer=choice.answer_index,
            )
        )
    return instances
