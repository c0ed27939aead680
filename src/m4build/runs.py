"""The run folder: the only place a long command keeps its state.

A run folder holds the effective recipe, the finished work units of every step (each written
atomically: temp file, fsync, rename), a log of attempts, and, at the end, the manifest and the
published data. Killing a command at any moment loses at most the unit in flight; rerunning the
same command finds the finished units and does only what is left. Steps never touch the file
system themselves: they ask the run folder for unit files and write through it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from m4build.errors import UsageError

SETTINGS_FILE = "settings.json"
MANIFEST_FILE = "manifest.json"
ATTEMPTS_FILE = "attempts.jsonl"


def utc_now() -> str:
    """Current time as ISO 8601 UTC with seconds precision, the format every record uses."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def stable_hash(value: Any, length: int = 16) -> str:
    """A short hash of a JSON-serialisable value that is the same on every machine and run."""
    payload = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:length]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` so that ``path`` is either absent, the old content, or the full new content."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_text(path, json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def atomic_write_with(path: Path, write: Callable[[str], None]) -> None:
    """Let ``write`` fill a temp file beside ``path`` (for libraries that want a file name), then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_parquet(path: Path, table: pa.Table) -> None:
    """Parquet written to a temp file in the same folder, then renamed into place."""
    atomic_write_with(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def package_versions(packages: Iterable[str]) -> dict[str, str]:
    """Installed versions of ``packages`` (and Python), for manifests; missing ones are left out."""
    versions = {"python": platform.python_version()}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _ends_mid_line(path: Path) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"


class RunFolder:
    """A run folder (``--out``) and the bookkeeping that makes its commands resumable."""

    def __init__(self, root: Path | str):
        self.root = Path(root)

    # -- layout -------------------------------------------------------------------------------
    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST_FILE

    def step_dir(self, step: str) -> Path:
        return self.state_dir / step

    # -- settings guard -----------------------------------------------------------------------
    def claim(self, settings: Mapping[str, Any]) -> bool:
        """Bind this folder to ``settings``; returns True when resuming an earlier run.

        Reusing a folder with different settings would mix two corpora, so it is refused with the
        keys that differ; the user picks a new ``--out`` instead.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / SETTINGS_FILE
        wanted = json.loads(json.dumps(dict(settings), default=str))
        if path.exists():
            try:
                existing = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                existing = None
            if existing is not None and existing != wanted:
                changed = sorted(
                    key for key in set(existing) | set(wanted) if existing.get(key) != wanted.get(key)
                )
                raise UsageError(
                    f"the run folder {self.root} was started with different settings "
                    f"(differs in: {', '.join(changed)})",
                    "Rerun with the original settings to resume it, or choose a new --out folder.",
                )
            if existing is not None:
                return True
        atomic_write_json(path, wanted)
        return False

    # -- work units ---------------------------------------------------------------------------
    def unit_path(self, step: str, unit: str) -> Path:
        return self.step_dir(step) / f"{unit}.parquet"

    def write_unit(self, step: str, unit: str, table: pa.Table) -> Path:
        path = self.unit_path(step, unit)
        atomic_write_parquet(path, table)
        return path

    def units(self, step: str) -> Iterator[Path]:
        """Finished units of a step, in name order (temp files of interrupted writes are skipped)."""
        folder = self.step_dir(step)
        if folder.is_dir():
            yield from sorted(p for p in folder.glob("*.parquet") if not p.name.startswith("."))

    def read_units(self, step: str) -> pa.Table | None:
        tables = [pq.read_table(path) for path in self.units(step)]
        if not tables:
            return None
        return pa.concat_tables(tables, promote_options="default")

    def clean_temp_files(self) -> int:
        """Remove leftovers of writes that a kill interrupted; they never hold finished work."""
        removed = 0
        if self.root.is_dir():
            for tmp in self.root.rglob(".*.tmp"):
                tmp.unlink(missing_ok=True)
                removed += 1
        return removed

    # -- attempts and manifest ----------------------------------------------------------------
    def log_attempt(self, record: Mapping[str, Any]) -> None:
        """Append one line per command invocation (start, end, stats); read back for the manifest."""
        path = self.root / ATTEMPTS_FILE
        line = json.dumps(dict(record), ensure_ascii=False, sort_keys=True, default=str) + "\n"
        if _ends_mid_line(path):
            line = "\n" + line  # a kill cut the previous line short; never glue onto it
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def attempts(self) -> list[dict[str, Any]]:
        path = self.root / ATTEMPTS_FILE
        if not path.exists():
            return []
        records = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by a kill; the attempt it described did not finish
        return records

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        atomic_write_json(self.manifest_path, manifest)
