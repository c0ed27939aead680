"""Loading index shards back from a published repo: only one language, checked, offline from the cache.

Online downloads are tested at the ``snapshot_download`` boundary with a fake that serves a
local folder laid out as the repo (and records the ``allow_patterns`` it was asked for), and with
the real ``snapshot_download`` against a loopback server speaking the Hub's download protocol
(``servers.hub``). The offline path also runs the real ``snapshot_download`` on a hand-laid cache.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub.errors import LocalEntryNotFoundError
from huggingface_hub.utils import filter_repo_objects
from servers.hub import COMMIT as SERVED_COMMIT
from servers.hub import HubServer
from test_hub import write_fake_index

from m4build.errors import InputFileError, RemoteError, UsageError
from m4build.hub.load import resolve_index_folder

REPO = "my-lab/m4rag-worldcuisines"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeSnapshots:
    """``snapshot_download`` over a local folder laid out as the repo; records every call."""

    def __init__(self, remote: Path, cache: Path):
        self.remote, self.cache = remote, cache
        self.calls: list[dict] = []

    def __call__(self, repo_id: str, **kwargs) -> str:
        self.calls.append({"repo_id": repo_id, **kwargs})
        snapshot = self.cache / (kwargs.get("revision") or "main")
        if kwargs["local_files_only"]:
            if not snapshot.is_dir():
                raise LocalEntryNotFoundError("not cached")
            return str(snapshot)
        present = [p.relative_to(self.remote).as_posix() for p in self.remote.rglob("*") if p.is_file()]
        for path in filter_repo_objects(present, allow_patterns=kwargs["allow_patterns"]):
            (snapshot / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(self.remote / path, snapshot / path)
        snapshot.mkdir(parents=True, exist_ok=True)
        return str(snapshot)


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, dict]:
    folder = tmp_path / "remote"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text("---\nlicense: cc-by-sa-4.0\n---\n")
    return folder, write_fake_index(folder, ("en", "zh", "zh-yue"))


@pytest.fixture
def snapshots(remote, tmp_path, monkeypatch) -> FakeSnapshots:
    fake = FakeSnapshots(remote[0], tmp_path / "cache")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return fake


def test_only_the_requested_language_is_downloaded_and_checked(remote, snapshots):
    _, manifest = remote
    folder = resolve_index_folder(REPO, "zh-yue", revision="v1")
    wanted = [item["path"] for item in manifest["languages"]["zh-yue"]["files"]]
    assert [call["allow_patterns"] for call in snapshots.calls] == [
        ["indexes/manifest.json"],
        ["indexes/manifest.json", *sorted(wanted)],
    ]
    assert all(
        call["repo_type"] == "dataset" and call["revision"] == "v1" and call["local_files_only"] is False
        for call in snapshots.calls
    )
    present = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert present == sorted(["indexes/manifest.json", *wanted])


def test_a_local_folder_passes_through_without_any_download(remote, snapshots):
    assert resolve_index_folder(str(remote[0]), "en") == remote[0]
    assert snapshots.calls == []


def test_a_checksum_mismatch_names_the_file_and_how_to_refetch(remote, snapshots):
    folder, _ = remote
    damaged = folder / "indexes/dense/minilm/en/index.faiss"
    damaged.write_bytes(bytes(len(damaged.read_bytes())))  # same size, other bytes
    with pytest.raises(InputFileError) as error:
        resolve_index_folder(REPO, "en")
    assert "indexes/dense/minilm/en/index.faiss has sha256" in error.value.message
    assert "Delete the cached copy" in error.value.hint and "index.faiss" in error.value.hint


def test_a_file_the_repo_lacks_is_named(remote, snapshots):
    (remote[0] / "indexes/bm25/zh/params.index.json").unlink()
    with pytest.raises(InputFileError, match="lacks indexes/bm25/zh/params.index.json"):
        resolve_index_folder(REPO, "zh")


def test_a_missing_language_lists_the_available_ones(remote, snapshots):
    with pytest.raises(UsageError) as error:
        resolve_index_folder(REPO, "sw")
    assert "no index for language 'sw'" in error.value.message
    assert "Available languages: en, zh, zh-yue" in error.value.hint
    assert len(snapshots.calls) == 1  # nothing but the manifest was fetched


def test_a_repo_without_indexes_says_how_to_add_them(remote, snapshots):
    shutil.rmtree(remote[0] / "indexes")
    with pytest.raises(InputFileError, match="published without indexes"):
        resolve_index_folder(REPO, "en")


def test_offline_mode_reads_the_cache_only(remote, snapshots, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RemoteError, match="not in the local HF cache"):
        resolve_index_folder(REPO, "en")
    assert snapshots.calls[0]["local_files_only"] is True


def test_neither_folder_nor_repo_id_is_refused(snapshots):
    with pytest.raises(UsageError, match="neither a folder nor a Hub repo id"):
        resolve_index_folder("./no/such/folder", "en")


def lay_out_hf_cache(cache: Path, remote: Path) -> Path:
    """The HF cache layout snapshot_download reads offline: refs/main -> snapshots/<commit>/..."""
    storage = cache / f"datasets--{REPO.replace('/', '--')}"
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text(COMMIT)
    shutil.copytree(remote / "indexes", storage / "snapshots" / COMMIT / "indexes")
    return storage / "snapshots" / COMMIT


def test_real_snapshot_download_works_offline_from_the_cache(remote, tmp_path, monkeypatch):
    snapshot = lay_out_hf_cache(tmp_path / "hf-cache", remote[0])
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_index_folder(REPO, "zh") == snapshot
    (snapshot / "indexes/passages/zh/passages.parquet").write_bytes(b"garbage")
    with pytest.raises(InputFileError, match="passages.parquet has 7 bytes"):
        resolve_index_folder(REPO, "zh")


def test_load_index_reads_a_repo_through_the_hub_and_a_folder_directly(remote, snapshots, monkeypatch):
    import m4build
    from m4build.retrieval import searcher

    opened = []
    monkeypatch.setattr(
        searcher, "load_index", lambda folder, lang, **options: opened.append((folder, lang, options))
    )
    m4build.load_index(REPO, "zh", model="other/model")
    m4build.load_index(remote[0], "en")
    snapshot = snapshots.cache / "main"
    # A download was checked on arrival, so the searcher does not hash it again; a local folder it does.
    assert opened == [
        (snapshot, "zh", {"model": "other/model", "verify": False}),
        (remote[0], "en", {"model": None, "verify": True}),
    ]


# -- the real snapshot_download against a loopback server speaking the Hub's download protocol ----


@pytest.fixture
def live_hub(remote, tmp_path, monkeypatch):
    """The real huggingface_hub, online, against ``servers.hub`` serving the remote folder."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with HubServer(remote[0], REPO) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        yield hub


def test_over_the_wire_only_one_language_is_fetched_then_it_works_offline(remote, live_hub, monkeypatch):
    _, manifest = remote
    folder = resolve_index_folder(REPO, "zh")
    wanted = sorted(item["path"] for item in manifest["languages"]["zh"]["files"])
    assert sorted(live_hub.downloads) == sorted(["indexes/manifest.json", *wanted])
    assert folder.name == SERVED_COMMIT and (folder / wanted[0]).is_file()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(live_hub.downloads)
    assert resolve_index_folder(REPO, "zh") == folder
    assert len(live_hub.downloads) == before


def test_over_the_wire_a_tampered_file_is_caught(remote, live_hub):
    tampered = remote[0] / "indexes/dense/minilm/en/ids.parquet"
    tampered.write_bytes(tampered.read_bytes() + b"x")
    with pytest.raises(InputFileError, match="ids.parquet has .* bytes, the manifest says"):
        resolve_index_folder(REPO, "en")


def test_over_the_wire_an_unknown_repo_is_named(live_hub):
    with pytest.raises(UsageError, match="no dataset repo my-lab/other"):
        resolve_index_folder("my-lab/other", "en")
