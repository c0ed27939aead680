"""Index shards back from a published repo: only the language asked for, checked, cache-friendly.

``resolve_index_folder`` turns what a user typed (a local folder or ``org/name``) into a local
folder that holds ``indexes/``. For a repo it downloads the index manifest first, then exactly
the files that manifest lists for the language (``snapshot_download`` with ``allow_patterns``),
so searching Swahili never pulls the English shards. Files land in the standard HF cache, where
later calls find them with no request, and ``HF_HUB_OFFLINE=1`` makes that explicit. Every file is
checked against the manifest's SHA-256 on each call, because a cache can be damaged between runs
and a silently wrong index gives silently wrong rankings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import huggingface_hub

from m4build.errors import InputFileError, UsageError
from m4build.hub.index_manifest import INDEX_MANIFEST, file_problem, language_files, parse_index_manifest
from m4build.hub.remote import hub_endpoint, hub_errors, offline_mode
from m4build.retrieval import searcher

REPO_TYPE = "dataset"
CORPUS_MANIFEST = "manifest.json"


def load_index(
    index: str | Path, lang: str, *, revision: str | None = None, model: str | None = None
) -> searcher.Searcher:
    """``m4build.load_index``: a searcher over one language of a local index folder or a Hub repo.

    The searcher (``m4build.retrieval``) reads local folders only, and may not import the Hub
    side (DESIGN: rooms import only from their left), so the two meet here. Files are checked
    once: a download by :func:`resolve_index_folder`, a local folder by the searcher.
    """
    folder = resolve_index_folder(str(index), lang, revision=revision)
    downloaded = folder != Path(index).expanduser()
    return searcher.load_index(folder, lang, model=model, verify=not downloaded)


def resolve_index_folder(index: str, lang: str | None, *, revision: str | None = None) -> Path:
    """A local folder holding ``indexes/`` for ``index``; ``lang=None`` fetches every language."""
    local = Path(index).expanduser()
    if local.is_dir():
        return local
    if not looks_like_repo_id(index):
        raise UsageError(
            f"{index!r} is neither a folder nor a Hub repo id",
            "Pass a run folder after `m4build index`, a folder written by `m4build push --dry-run`, or org/name.",
        )
    origin = f"{index}@{revision}" if revision else index
    snapshot = download(index, [INDEX_MANIFEST], revision)
    manifest = read_repo_manifest(snapshot, origin)
    files = language_files(manifest, lang, origin)
    snapshot = download(index, [INDEX_MANIFEST, *(item["path"] for item in files)], revision)
    verify(snapshot, files, origin)
    return snapshot


def index_info(index: str | Path, *, revision: str | None = None) -> dict[str, Any]:
    """The index manifest of a local folder or a Hub repo (only the manifest is downloaded).

    Evaluations read it to know which languages have shards before loading any, and hash it so a
    rebuilt index makes a new evaluation run.
    """
    local = Path(index).expanduser()
    if local.is_dir():
        root = searcher.locate_index(local)
        return parse_index_manifest(root / INDEX_MANIFEST, str(root))
    if not looks_like_repo_id(str(index)):
        resolve_index_folder(str(index), None, revision=revision)  # raises the clear error
    origin = f"{index}@{revision}" if revision else str(index)
    return read_repo_manifest(download(str(index), [INDEX_MANIFEST], revision), origin)


def corpus_manifest(index: str | Path, *, revision: str | None = None) -> dict[str, Any] | None:
    """The corpus manifest (``manifest.json``) beside an index, or ``None`` where there is none."""
    local = Path(index).expanduser()
    if local.is_dir():
        path = local / CORPUS_MANIFEST
    elif looks_like_repo_id(str(index)):
        path = download(str(index), [CORPUS_MANIFEST], revision) / CORPUS_MANIFEST
    else:
        return None
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputFileError(f"{path} is not valid JSON ({error}).", "Rebuild or re-download the corpus.") from error


def looks_like_repo_id(text: str) -> bool:
    """``org/name`` with Hub-legal characters; anything else can only have been meant as a path."""
    parts = text.split("/")
    legal = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
    return len(parts) == 2 and all(part and set(part) <= legal and part not in (".", "..") for part in parts)


def download(repo_id: str, patterns: list[str], revision: str | None) -> Path:
    """``snapshot_download`` of just ``patterns``; offline it reads the HF cache and nothing else."""
    with hub_errors(repo_id, "download from"):
        folder = huggingface_hub.snapshot_download(
            repo_id,
            repo_type=REPO_TYPE,
            revision=revision,
            allow_patterns=patterns,
            local_files_only=offline_mode(),
            endpoint=hub_endpoint(),
        )
    return Path(folder)


def read_repo_manifest(snapshot: Path, origin: str) -> dict[str, Any]:
    if not (snapshot / INDEX_MANIFEST).is_file():
        raise InputFileError(
            f"{origin} has no {INDEX_MANIFEST}: it was published without indexes",
            "Its publisher can run `m4build index RUN` and then `m4build push RUN --repo ...` again.",
        )
    return parse_index_manifest(snapshot / INDEX_MANIFEST, origin)


def verify(snapshot: Path, files: list[dict[str, Any]], origin: str) -> None:
    """Check every downloaded file; the first bad one is named with the cached file to delete."""
    for item in files:
        problem = file_problem(snapshot, item)
        if problem and not (snapshot / item["path"]).exists():
            raise InputFileError(
                f"{origin} lacks {item['path']}, which its index manifest lists",
                "The repo is incomplete: its publisher should rerun `m4build push` (it resumes).",
            )
        if problem:
            cached = (snapshot / item["path"]).resolve()
            raise InputFileError(
                f"index file of {origin} failed its check: {problem}",
                f"Delete the cached copy {cached} and run again to download it afresh "
                f"(`hf cache delete` removes the whole revision). If a fresh copy fails too, the repo's "
                "manifest and shards disagree: its publisher should rerun `m4build push`.",
            )
