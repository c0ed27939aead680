"""The rows a generation run fills a prompt with, read and checked before any model is called.

A JSONL file, one object per line: the prompt's variables, an optional ``id`` (the line number
otherwise) and optional ``images`` (paths relative to the file). Everything that would fail later
(bad JSON, repeated ids, missing variables, missing images) fails here, naming the line, so a paid
run never stops half way on an input mistake.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m4build.errors import InputFileError
from m4build.llm.messages import ImagePart
from m4build.llm.prompts import PromptTemplate

IMAGES_FIELD = "images"


@dataclass(frozen=True)
class PromptRow:
    """One input row: its id, the prompt variables and the images to attach."""

    id: str
    variables: dict[str, Any]
    image_paths: tuple[Path, ...] = ()

    def images(self) -> list[ImagePart]:
        return [ImagePart.from_path(path) for path in self.image_paths]


def read_rows(path: Path, prompt: PromptTemplate) -> list[PromptRow]:
    """Every row of ``path``, checked against what ``prompt`` needs."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise InputFileError(f"Cannot read {path}: {error.strerror}.", "Check the --input path.")
    rows: list[PromptRow] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        row = _parse(path, number, line)
        missing = [name for name in prompt.variables if name not in row.variables]
        if missing:
            raise InputFileError(
                f"{path}, line {number}: no value for {', '.join(missing)}, which prompt {prompt.name} needs.",
                f"Every row needs: {', '.join(prompt.variables)}.",
            )
        if row.id in seen:
            raise InputFileError(
                f"{path}, line {number}: id {row.id!r} was already used on line {seen[row.id]}.",
                "Give every row a distinct id.",
            )
        seen[row.id] = number
        rows.append(row)
    if not rows:
        raise InputFileError(f"{path} holds no rows.", "Write one JSON object per line.")
    return rows


def _parse(path: Path, number: int, line: str) -> PromptRow:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputFileError(f"{path}, line {number}: not valid JSON ({error.msg}).", "Write one JSON object per line.")
    if not isinstance(value, dict):
        raise InputFileError(f"{path}, line {number}: expected a JSON object, got {type(value).__name__}.")
    row_id = str(value.pop("id", number))
    images = value.pop(IMAGES_FIELD, None) or []
    if isinstance(images, str):
        images = [images]
    paths = tuple(_image_path(path, number, image) for image in images)
    return PromptRow(row_id, value, paths)


def _image_path(path: Path, number: int, image: Any) -> Path:
    if not isinstance(image, str):
        raise InputFileError(f"{path}, line {number}: `{IMAGES_FIELD}` must hold file paths.")
    resolved = (path.parent / image).resolve()
    if not resolved.is_file():
        raise InputFileError(f"{path}, line {number}: image {image} does not exist (looked at {resolved}).")
    return resolved
