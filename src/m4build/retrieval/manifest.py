"""The index layout and its manifest: the contract between ``m4build index``, the searcher and the Hub.

Layout, relative to the folder that holds ``indexes/`` (a run folder or a pushed repo folder, so
the same manifest works in both)::

    indexes/manifest.json
    indexes/passages/{lang}/passages.parquet
    indexes/dense/{model_slug}/{lang}/index.faiss + ids.parquet
    indexes/bm25/{lang}/<bm25s files> + ids.parquet

Every file is listed in its language's ``files`` with its sha256 and size: the builder skips a
shard whose files still match (resumability), and the searcher refuses a file that does not
(a truncated download or a corrupted shard is named, not silently searched).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePath
from typing import Any

from m4build.errors import InputFileError
from m4build.runs import atomic_write_json

FORMAT = "m4build-index/1"
INDEXES = "indexes"
MANIFEST = f"{INDEXES}/manifest.json"
# Suffix of half-built shard folders; not ``.tmp``, which RunFolder.clean_temp_files unlinks as files.
STAGING = ".staging"


def passages_path(lang: str) -> str:
    return f"{INDEXES}/passages/{lang}/passages.parquet"


def dense_dir(model_slug: str, lang: str) -> str:
    return f"{INDEXES}/dense/{model_slug}/{lang}"


def bm25_dir(lang: str) -> str:
    return f"{INDEXES}/bm25/{lang}"


def model_slug(model: str) -> str:
    """A folder name for a model: ``org--name`` for a Hub id, the last two path parts for a local path."""
    parts = PurePath(model).parts[-2:]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "--".join(parts)).strip("-") or "model"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_entry(root: Path, relative: str, kind: str, **extra: Any) -> dict[str, Any]:
    """A manifest entry for one written file: path, kind, checksum, size and any shard facts."""
    path = root / relative
    return {
        "path": relative,
        "kind": kind,
        "sha256": sha256_file(path),
        "bytes": path.stat().st_size,
        **extra,
    }


def replace_dir(target: Path, fill: Callable[[Path], None]) -> None:
    """Build a folder in a temp sibling, then swap it in, so a kill never leaves a half-written shard."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=STAGING, dir=target.parent))
    try:
        fill(staging)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def clean_leftovers(folder: Path) -> None:
    """Remove temp files and staging folders that a kill left behind; they never hold finished work."""
    if not folder.is_dir():
        return
    for leftover in sorted(folder.rglob(f".*{STAGING}"), reverse=True):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in folder.rglob(".*.tmp"):
        if leftover.is_file():
            leftover.unlink(missing_ok=True)


def read_manifest(root: Path) -> dict[str, Any]:
    """The index manifest of ``root``, or a clear error when there is none or it is unreadable."""
    path = root / MANIFEST
    if not path.is_file():
        raise InputFileError(
            f"{root} has no index: {MANIFEST} is missing",
            f"Build one with: m4build index {root}",
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFileError(
            f"{path} is not valid JSON ({exc})", f"Rebuild it with: m4build index {root}"
        ) from None
    if manifest.get("format") != FORMAT:
        raise InputFileError(
            f"{path} has format {manifest.get('format')!r}; this m4build reads {FORMAT!r}",
            "Rebuild the index with this version of m4build, or upgrade m4build.",
        )
    return manifest


def write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    atomic_write_json(root / MANIFEST, manifest)


def entries_under(files: Iterable[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The entries whose path lies in the folder ``prefix``."""
    return [entry for entry in files if entry["path"].startswith(prefix.rstrip("/") + "/")]


def files_match(root: Path, entries: Iterable[dict[str, Any]]) -> bool:
    """True when every listed file exists with its recorded size and checksum (a finished shard)."""
    entries = list(entries)
    return bool(entries) and all(_matches(root, entry) for entry in entries)


def _matches(root: Path, entry: dict[str, Any]) -> bool:
    path = root / entry["path"]
    return path.is_file() and path.stat().st_size == entry["bytes"] and sha256_file(path) == entry["sha256"]


def verify_files(root: Path, entries: Iterable[dict[str, Any]]) -> None:
    """Raise a clear error naming the first listed file that is missing or does not match its checksum."""
    for entry in entries:
        path = root / entry["path"]
        if not path.is_file():
            raise InputFileError(
                f"index file missing: {path}",
                "Download the index again, or rebuild it with `m4build index RUN`.",
            )
        if path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]:
            raise InputFileError(
                f"checksum mismatch for {path}: the file is corrupted or was changed after the index was built",
                "Download the index again, or rebuild that language with `m4build index RUN --lang ...` "
                "(a shard that does not match its manifest is rebuilt).",
            )
