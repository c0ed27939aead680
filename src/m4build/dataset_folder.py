"""A folder that ``datasets.load_dataset(folder, config)`` loads exactly as the Hub would.

The Hub resolves a repository's configs from the YAML front matter of its README
(``configs: [{config_name, data_files: [{split, path}]}]``); no loading script is involved
(``datasets`` 4.0 removed them). Writing our run folders in that layout means the folder we build
is the folder we publish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import yaml

from m4build.errors import InputFileError
from m4build.runs import atomic_write_parquet

ROWS_PER_SHARD = 250_000


@dataclass(frozen=True)
class ConfigFiles:
    """One config of the folder: its name, split and the glob that the README points at."""

    name: str
    split: str
    pattern: str
    rows: int
    bytes: int = field(default=0, compare=False)  # size of the files on disk; 0 when read back from a README


def write_config(root: Path, name: str, table: pa.Table, split: str = "train", folder: str | None = None) -> ConfigFiles:
    """Write ``table`` as ``data/{folder}/{split}-0000i-of-0000n.parquet`` shards, atomically each.

    Stale shards of an earlier, differently sized write are removed so the glob matches only the
    current shards.
    """
    target = root / "data" / (folder or name)
    shards = max(1, -(-table.num_rows // ROWS_PER_SHARD))
    written = set()
    size = 0
    for index in range(shards):
        path = target / f"{split}-{index:05d}-of-{shards:05d}.parquet"
        atomic_write_parquet(path, table.slice(index * ROWS_PER_SHARD, ROWS_PER_SHARD))
        written.add(path.name)
        size += path.stat().st_size
    for stale in target.glob(f"{split}-*.parquet"):
        if stale.name not in written:
            stale.unlink()
    return ConfigFiles(name, split, f"data/{folder or name}/{split}-*.parquet", table.num_rows, size)


def front_matter(configs: Sequence[ConfigFiles], metadata: Mapping[str, object], default: str | None = None) -> str:
    """The README's YAML header: card metadata plus the ``configs`` list the Hub reads."""
    entries: dict[str, dict[str, object]] = {}
    for config in configs:  # a config with several splits is one entry listing each split's files
        entry = entries.setdefault(config.name, {"config_name": config.name, "data_files": []})
        entry["data_files"].append({"split": config.split, "path": config.pattern})  # type: ignore[union-attr]
        if config.name == default:
            entry["default"] = True
    header = {**metadata, "configs": list(entries.values())}
    if configs and all(config.bytes for config in configs):
        header["dataset_info"] = dataset_info(configs)
    return "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000) + "---\n"


def dataset_info(configs: Sequence[ConfigFiles]) -> list[dict[str, object]]:
    """The card's ``dataset_info``: examples and bytes per split.

    Besides telling the Hub the sizes, it keeps ``load_dataset`` honest on a local folder: its cache
    key for a folder is a hash of the README's configs and dataset_info, not of the data files, so
    without sizes that change with the content a rewritten folder (grades imported, a corpus rebuilt)
    would be served from the old cache.
    """
    infos: dict[str, dict[str, object]] = {}
    for config in configs:
        info = infos.setdefault(config.name, {"config_name": config.name, "splits": [], "download_size": 0, "dataset_size": 0})
        info["splits"].append({"name": config.split, "num_bytes": config.bytes, "num_examples": config.rows})  # type: ignore[union-attr]
        info["download_size"] += config.bytes  # type: ignore[operator]
        info["dataset_size"] += config.bytes  # type: ignore[operator]
    return list(infos.values())


def read_configs(readme: Path, rows: Mapping[str, int]) -> list[ConfigFiles]:
    """The configs a README's front matter declares, as :func:`write_config` described them.

    The front matter is the contract with the Hub, so it (not a directory listing) says what a
    folder publishes; ``rows`` (the manifest's counts) fills in what YAML does not carry.
    """
    text = readme.read_text(encoding="utf-8")
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        raise InputFileError(
            f"{readme} has no YAML front matter, so it declares no configs",
            "Run the command that built the folder again (same --out) to rewrite its README.",
        )
    header = yaml.safe_load(text[4 : text.index("\n---\n", 3)]) or {}
    configs = []
    for entry in header.get("configs", []):
        for files in entry["data_files"]:
            name = entry["config_name"]
            configs.append(ConfigFiles(name, files["split"], files["path"], rows.get(name, 0)))
    return configs
