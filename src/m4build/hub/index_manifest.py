"""Reading and checking ``indexes/manifest.json``, the index builder's record of its files.

Both directions of publishing trust this file: ``push`` ships exactly the files it lists (after
checking them, so a half-written shard is never published), and ``load`` downloads exactly the
files of one language and checks them on arrival. Paths are relative to the folder that holds
``indexes/``, the same in a run folder, a repo folder and a Hub snapshot. The layout, format and
checksum function are the index builder's (``m4build.retrieval.manifest``); what is added here
is what publishing needs: messages that name the run or repo, and a refusal of any listed path
that would leave ``indexes/`` (push copies what the manifest lists).
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from m4build.errors import InputFileError, UsageError
from m4build.retrieval.manifest import FORMAT, MANIFEST, sha256_file

INDEX_MANIFEST = MANIFEST


def parse_index_manifest(path: Path, origin: str) -> dict[str, Any]:
    """The manifest at ``path``, validated; ``origin`` names the run or repo in messages."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputFileError(
            f"the index manifest of {origin} ({path}) cannot be read: {error}",
            "Rebuild the index with `m4build index` (it rewrites the manifest), then try again.",
        ) from error
    found = manifest.get("format") if isinstance(manifest, dict) else None
    if found != FORMAT:
        raise InputFileError(
            f"{path} has index format {found!r}; this m4build reads {FORMAT!r}",
            "Rebuild the index with `m4build index` of this version (or upgrade m4build), then push again.",
        )
    for lang, entry in manifest.get("languages", {}).items():
        for item in entry.get("files", []):
            _check_entry(item, lang, path)
    return manifest


def _check_entry(item: Any, lang: str, path: Path) -> None:
    """A listed file must stay inside ``indexes/`` and carry a checksum, or we cannot trust it."""
    relative = PurePosixPath(str(item.get("path", ""))) if isinstance(item, dict) else None
    if (
        relative is None
        or relative.parts[:1] != ("indexes",)
        or ".." in relative.parts
        or not isinstance(item.get("sha256"), str)
    ):
        raise InputFileError(
            f"{path}: a file entry of language {lang!r} is malformed: {item!r}",
            "Each entry needs a path under indexes/ and a sha256; rebuild the index with `m4build index`.",
        )


def language_files(manifest: dict[str, Any], lang: str | None, origin: str) -> list[dict[str, Any]]:
    """The file entries of one language (all languages for ``None``), sorted by path."""
    languages = manifest.get("languages", {})
    if lang is not None and lang not in languages:
        available = ", ".join(sorted(languages)) or "none"
        raise UsageError(
            f"{origin} has no index for language {lang!r}",
            f"Available languages: {available}. Pick one of them, or build that language with `m4build index`.",
        )
    chosen = [languages[lang]] if lang is not None else list(languages.values())
    return sorted(
        (item for entry in chosen for item in entry.get("files", [])), key=lambda item: item["path"]
    )


def file_problem(root: Path, item: dict[str, Any]) -> str | None:
    """What is wrong with a listed file under ``root`` (missing, wrong size, wrong hash), or None.

    The size is compared first because it is free and catches truncated copies without reading
    a multi-gigabyte shard.
    """
    path = root / item["path"]
    if not path.is_file():
        return f"{item['path']} is missing"
    size = path.stat().st_size
    if "bytes" in item and size != int(item["bytes"]):
        return f"{item['path']} has {size} bytes, the manifest says {item['bytes']}"
    actual = sha256_file(path)
    if actual != item["sha256"]:
        return f"{item['path']} has sha256 {actual}, the manifest says {item['sha256']}"
    return None
