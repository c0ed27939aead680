"""The Hub repo folder: what ``m4build push`` uploads, assembled from a run folder.

The repo holds the corpus exactly as the run folder declares it (the parquet files its README's
``configs`` point at), the corpus ``manifest.json`` and ``failures.jsonl`` it refers to, a card
re-rendered with the index facts and the repo id, and, when the run was indexed, every file the
index manifest lists plus that manifest. Nothing else from the run folder (state, caches,
attempt logs) leaves the machine.

The folder is assembled in place and idempotently so that a rerun after a failed upload finds
the same folder (huggingface_hub keeps its upload bookkeeping in ``.cache/huggingface`` inside
it): files are hard-linked when the file system allows (no second copy of a large corpus),
copied otherwise, and files a previous assembly placed but the current plan lacks are removed,
because a stale shard would otherwise match a config's glob.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m4build.dataset_card import render_card
from m4build.dataset_folder import ConfigFiles, read_configs
from m4build.errors import InputFileError, UsageError
from m4build.hub.index_manifest import INDEX_MANIFEST, file_problem, language_files, parse_index_manifest
from m4build.runs import MANIFEST_FILE, atomic_write_json, atomic_write_text

README = "README.md"
MARKER = ".m4build-repo.json"  # the files the last assembly placed; never uploaded
PROVENANCE_FILES = (MANIFEST_FILE, "failures.jsonl")
TEMP_SUFFIX = ".m4build.tmp"


@dataclass(frozen=True)
class RepoFile:
    """One file of the repo: its path in the repo and the run-folder file it comes from."""

    path: str
    source: Path
    bytes: int


@dataclass(frozen=True)
class RepoPlan:
    """Everything a push sends, decided before anything is written or uploaded."""

    run: Path
    repo_id: str
    files: list[RepoFile]
    readme: str
    configs: list[ConfigFiles]
    index: dict[str, Any] | None

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files) + len(self.readme.encode("utf-8"))

    @property
    def paths(self) -> list[str]:
        """Every path the repo will hold, sorted: the files and the card."""
        return sorted([README, *(f.path for f in self.files)])


def plan_repo(run: Path, repo_id: str) -> RepoPlan:
    """Read the run folder and decide the repo's files; fails early on a run that is not finished."""
    manifest = read_corpus_manifest(run)
    configs = read_configs(run / README, manifest.get("configs", {}))
    files = data_files(run, configs) + provenance_files(run)
    index = None
    if (run / INDEX_MANIFEST).is_file():
        index = parse_index_manifest(run / INDEX_MANIFEST, f"the run folder {run}")
        files += index_files(run, index)
    files.sort(key=lambda f: f.path)
    readme = render_card(manifest, configs, index=index, repo_id=repo_id)
    return RepoPlan(run=run, repo_id=repo_id, files=files, readme=readme, configs=configs, index=index)


def read_corpus_manifest(run: Path) -> dict[str, Any]:
    """The corpus manifest; its absence means the run has no finished corpus to publish."""
    path = run / MANIFEST_FILE
    if not path.is_file() or not (run / README).is_file():
        raise InputFileError(
            f"{run} holds no finished corpus (no {MANIFEST_FILE} and {README})",
            "Build it first, e.g. `m4build corpus worldcuisines --source sample --out RUN`, or rerun that "
            "command on the same --out to finish an interrupted build.",
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputFileError(
            f"{path} is not valid JSON ({error})",
            "Rerun the corpus command on the same --out: it rewrites the manifest from the finished work.",
        ) from error


def data_files(run: Path, configs: list[ConfigFiles]) -> list[RepoFile]:
    """The parquet files the configs' globs match, which is what the Hub will resolve them to."""
    found: dict[str, Path] = {}
    for config in configs:
        matches = [p for p in run.glob(config.pattern) if p.is_file() and not p.name.startswith(".")]
        if not matches:
            raise InputFileError(
                f"config {config.name!r} of {run} points at {config.pattern}, which matches no file",
                "Rerun the corpus command on the same --out to rewrite the data files.",
            )
        found.update((p.relative_to(run).as_posix(), p) for p in matches)
    return [RepoFile(path, source, source.stat().st_size) for path, source in found.items()]


def provenance_files(run: Path) -> list[RepoFile]:
    present = [run / name for name in PROVENANCE_FILES if (run / name).is_file()]
    return [RepoFile(p.name, p, p.stat().st_size) for p in present]


def index_files(run: Path, index: dict[str, Any]) -> list[RepoFile]:
    """The index manifest and every file it lists, each checked so a broken shard is never published."""
    entries = language_files(index, None, f"the run folder {run}")
    problems = [problem for item in entries if (problem := file_problem(run, item))]
    if problems:
        raise InputFileError(
            f"the index of {run} does not match its manifest: " + "; ".join(problems[:5]),
            "Rerun `m4build index` on this run folder: it rebuilds the shards that are missing or damaged.",
        )
    paths = [INDEX_MANIFEST, *(item["path"] for item in entries)]
    return [RepoFile(path, run / path, (run / path).stat().st_size) for path in paths]


def write_repo_folder(plan: RepoPlan, folder: Path) -> Path:
    """Make ``folder`` hold exactly the plan (plus huggingface_hub's own cache); returns it."""
    guard_folder(folder, plan.run)
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.rglob(f"*{TEMP_SUFFIX}"):
        leftover.unlink()
    previous = placed_before(folder)
    # Claimed before placing anything, so a kill mid-assembly leaves a folder the rerun recognises.
    atomic_write_json(folder / MARKER, sorted(previous | set(plan.paths)))
    for file in plan.files:
        place(file.source, folder / file.path)
    atomic_write_text(folder / README, plan.readme)
    for stale in sorted(previous - set(plan.paths)):
        remove_with_empty_parents(folder / stale, folder)
    atomic_write_json(folder / MARKER, plan.paths)
    return folder


def guard_folder(folder: Path, run: Path) -> None:
    """Refuse folders we would damage: the run folder itself, or a non-empty folder we did not make."""
    if folder.resolve() == run.resolve() or run.resolve().is_relative_to(folder.resolve()):
        raise UsageError(
            f"--folder {folder} would contain the run folder {run}",
            f"Use a folder of its own, e.g. the default {run / 'hub'}.",
        )
    if folder.is_dir() and any(folder.iterdir()) and not (folder / MARKER).is_file():
        raise UsageError(
            f"--folder {folder} is not empty and was not made by m4build push",
            "Choose an empty or new folder; m4build push removes files from its own folders only.",
        )


def placed_before(folder: Path) -> set[str]:
    marker = folder / MARKER
    return set(json.loads(marker.read_text(encoding="utf-8"))) if marker.is_file() else set()


def place(source: Path, target: Path) -> None:
    """Hard-link ``source`` at ``target`` (copy across file systems), unless it is already there."""
    if target.exists() and same_file(source, target):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}{TEMP_SUFFIX}")
    temp.unlink(missing_ok=True)
    try:
        os.link(source, temp)
    except OSError:
        shutil.copy2(source, temp)
    os.replace(temp, target)


def same_file(source: Path, target: Path) -> bool:
    """A hard link is the same inode; a copy kept its size and mtime (copy2) unless rewritten since."""
    if os.path.samefile(source, target):
        return True
    a, b = source.stat(), target.stat()
    return a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns


def remove_with_empty_parents(path: Path, root: Path) -> None:
    path.unlink(missing_ok=True)
    parent = path.parent
    while parent != root and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent
