"""The run folder: atomic writes, the settings guard, attempts, and the Hub folder layout."""

from __future__ import annotations

import datasets
import pyarrow as pa
import pytest

from m4build.dataset_folder import ConfigFiles, front_matter, read_configs, write_config
from m4build.errors import UsageError
from m4build.runs import RunFolder, atomic_write_text, stable_hash


def test_atomic_write_leaves_old_content_when_the_write_fails(tmp_path, monkeypatch):
    target = tmp_path / "file.txt"
    atomic_write_text(target, "old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("m4build.runs.os.replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]  # no temp file left behind


def test_claim_resumes_with_same_settings_and_refuses_others(tmp_path):
    run = RunFolder(tmp_path / "run")
    assert run.claim({"benchmark": "cvqa", "k": 25}) is False
    assert run.claim({"benchmark": "cvqa", "k": 25}) is True
    with pytest.raises(UsageError, match="differs in: k") as caught:
        run.claim({"benchmark": "cvqa", "k": 5})
    assert "new --out" in caught.value.hint


def test_units_skip_interrupted_temp_files_and_clean_them(tmp_path):
    run = RunFolder(tmp_path)
    run.write_unit("search", "enwiki-a", pa.table({"x": [1, 2]}))
    (run.step_dir("search") / ".enwiki-b.parquet.123.tmp").write_bytes(b"half a file")
    assert [p.name for p in run.units("search")] == ["enwiki-a.parquet"]
    assert run.read_units("search").num_rows == 2
    assert run.clean_temp_files() == 1


def test_attempt_log_survives_a_line_cut_short(tmp_path):
    run = RunFolder(tmp_path)
    run.log_attempt({"requests": {"search": 2}})
    with open(tmp_path / "attempts.jsonl", "a") as handle:
        handle.write('{"requests": {"sea')  # what a kill during a write leaves
    run.log_attempt({"requests": {"search": 3}})
    assert [a["requests"]["search"] for a in run.attempts()] == [2, 3]


def test_stable_hash_ignores_key_order():
    assert stable_hash({"a": 1, "b": [1, 2]}) == stable_hash({"b": [1, 2], "a": 1})


def test_written_folder_loads_with_load_dataset_per_config(tmp_path):
    en = write_config(tmp_path, "en", pa.table({"id": ["en:1", "en:2"], "text": ["a", "b"]}), folder="corpus/en")
    ja = write_config(tmp_path, "ja", pa.table({"id": ["ja:1"], "text": ["c"]}), folder="corpus/ja")
    default = ConfigFiles("default", "train", "data/corpus/*/train-*.parquet", 3)
    header = front_matter([default, en, ja], {"license": "cc-by-sa-4.0"}, default="default")
    atomic_write_text(tmp_path / "README.md", header + "\nBody\n")
    assert read_configs(tmp_path / "README.md", {"en": 2, "ja": 1, "default": 3}) == [default, en, ja]
    assert datasets.load_dataset(str(tmp_path), "ja", split="train")["id"] == ["ja:1"]
    assert sorted(datasets.load_dataset(str(tmp_path), "default", split="train")["id"]) == ["en:1", "en:2", "ja:1"]
    assert sorted(datasets.load_dataset(str(tmp_path), split="train")["id"]) == ["en:1", "en:2", "ja:1"]


def test_rewriting_a_config_with_fewer_shards_removes_stale_ones(tmp_path, monkeypatch):
    monkeypatch.setattr("m4build.dataset_folder.ROWS_PER_SHARD", 1)
    write_config(tmp_path, "en", pa.table({"x": [1, 2, 3]}))
    assert len(list((tmp_path / "data" / "en").glob("*.parquet"))) == 3
    write_config(tmp_path, "en", pa.table({"x": [1]}))
    assert [p.name for p in (tmp_path / "data" / "en").glob("*.parquet")] == ["train-00000-of-00001.parquet"]
