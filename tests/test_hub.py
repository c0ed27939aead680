"""Publishing: the dataset card, the repo folder ``m4build push --dry-run`` writes, and the upload.

The upload is tested at the huggingface_hub call boundary: ``HfApi`` methods are replaced by fakes
that record their arguments (and, for ``upload_folder``, the exact files huggingface_hub would
send from the folder), so no test ever reaches an endpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import httpx2
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils import filter_repo_objects
from huggingface_hub.utils._paths import DEFAULT_IGNORE_PATTERNS

from m4build.cli.app import main
from m4build.dataset_card import hub_language
from m4build.errors import InputFileError, UsageError
from m4build.hub import repo as repo_module
from m4build.hub.repo import MARKER, plan_repo, write_repo_folder

REPO = "my-lab/m4rag-worldcuisines"
INDEX_LANGS = ("en", "zh")


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory) -> Path:
    """One real corpus run on the embedded sample, built once and copied by each test."""
    run = tmp_path_factory.mktemp("corpus") / "run"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "m4build",
            "corpus",
            "worldcuisines",
            "--lang",
            "all",
            "--source",
            "sample",
            "--out",
            str(run),
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    return run


@pytest.fixture
def run(sample_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(sample_run, copy, ignore=shutil.ignore_patterns("cache", "state"))
    return copy


def write_fake_index(root: Path, langs: tuple[str, ...] = INDEX_LANGS) -> dict:
    """An ``indexes/`` folder in the index builder's layout, with a manifest of real checksums."""
    languages = {}
    for lang in langs:
        files = {
            f"indexes/passages/{lang}/passages.parquet": ("passages", None),
            f"indexes/dense/minilm/{lang}/index.faiss": ("dense", os.urandom(512)),
            f"indexes/dense/minilm/{lang}/ids.parquet": ("ids", None),
            f"indexes/bm25/{lang}/params.index.json": ("bm25", json.dumps({"lang": lang}).encode()),
        }
        entries = []
        for path, (kind, payload) in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if payload is None:
                pq.write_table(
                    pa.table({"id": [f"{lang}wiki:1:2:0:0"], "text": [f"{kind} of {lang}"]}), target
                )
            else:
                target.write_bytes(payload)
            data = target.read_bytes()
            entries.append(
                {"path": path, "kind": kind, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            )
        languages[lang] = {"passages": 1, "files": entries}
    manifest = {
        "format": "m4build-index/1",
        "dense": {"model": "sentence-transformers/all-MiniLM-L6-v2", "dimension": 384, "metric": "ip"},
        "languages": languages,
    }
    (root / "indexes" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return manifest


def front_matter(readme: Path) -> dict:
    text = readme.read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n")[1])


def cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """Run ``m4build`` in this process (so fakes apply) through its real error handling."""
    monkeypatch.setattr(sys, "argv", ["m4build", *args])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    return exited.value.code, captured.out, captured.err


# -- the card ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("simple", "en"),
        ("zh-yue", "yue"),
        ("zh-min-nan", "nan"),
        ("yue-Hant", "yue"),
        ("nan-Latn", "nan"),
        ("zh-Hans-CN", "zh"),
        ("fil-PH", "fil"),
        ("es-MX", "es"),
        ("en", "en"),
        ("be-tarask", "be"),
    ],
)
def test_wiki_and_bcp47_codes_become_hub_language_codes(code, expected):
    assert hub_language(code) == expected


def test_card_front_matter_carries_hub_fields_and_iso_codes(run):
    write_fake_index(run)
    plan = plan_repo(run, REPO)
    folder = write_repo_folder(plan, run / "hub")
    header = front_matter(folder / "README.md")
    assert header["pretty_name"] == "M4-RAG Wikipedia corpus for WorldCuisines"
    assert header["license"] == "cc-by-sa-4.0"
    assert header["size_categories"] == ["n<1K"]
    assert header["task_categories"] == ["text-retrieval", "visual-question-answering"]
    assert header["source_datasets"] == ["worldcuisines/vqa-v1.1", "worldcuisines/food-kb"]
    assert "m4-rag" in header["tags"]
    languages = header["language"]
    assert {"en", "zh", "yue", "nan", "ja", "ar"} <= set(languages)
    assert all(len(code) in (2, 3) and code.isalpha() and code.islower() for code in languages), languages
    assert languages == sorted(set(languages))
    names = [config["config_name"] for config in header["configs"]]
    assert names[0] == "default" and header["configs"][0]["default"] is True
    assert names[-1] == "queries"
    assert set(names[1:-1]) == {"ar", "cs", "en", "es", "fr", "it", "ru", "zh"}
    body = (folder / "README.md").read_text(encoding="utf-8")
    assert f'load_dataset("{REPO}"' in body
    assert (
        "sentence-transformers/all-MiniLM-L6-v2" in body
        and "| `zh` | 1 | 4 |" in body
        and "dimension: 384" in body
    )
    assert "eprint        = {2512.05959}" in body and "@misc{m4build" in body
    assert "snapshot date: latest" in body and "708 queries" in body


def test_run_folder_card_has_no_index_section_until_push(run):
    body = (run / "README.md").read_text(encoding="utf-8")
    assert "ships no index shards" in body
    assert front_matter(run / "README.md")["license"] == "cc-by-sa-4.0"


# -- the repo folder -----------------------------------------------------------------------------


def test_dry_run_folder_loads_every_config_with_load_dataset(run, monkeypatch, capsys):
    write_fake_index(run)
    code, out, _ = cli(monkeypatch, capsys, "push", str(run), "--repo", REPO, "--dry-run")
    assert code == 0, out
    folder = run / "hub"
    assert "dry run: nothing uploaded" in out and "index languages: en, zh" in out
    rows = json.loads((run / "manifest.json").read_text())["configs"]
    configs = [config["config_name"] for config in front_matter(folder / "README.md")["configs"]]
    assert {"default", "queries"} <= set(configs)
    for name in configs:
        loaded = datasets.load_dataset(str(folder), name, split="train")
        assert loaded.num_rows == rows[name], name
    assert datasets.load_dataset(str(folder), split="train").num_rows == rows["default"]


def test_repo_folder_holds_exactly_the_plan_with_hard_links(run):
    index = write_fake_index(run)
    folder = write_repo_folder(plan_repo(run, REPO), run / "hub")
    placed = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    index_paths = [
        "indexes/manifest.json",
        *(f["path"] for lang in index["languages"].values() for f in lang["files"]),
    ]
    data = sorted(p.relative_to(run).as_posix() for p in (run / "data").rglob("*.parquet"))
    assert placed == sorted([MARKER, "README.md", "manifest.json", "failures.jsonl", *data, *index_paths])
    assert os.path.samefile(folder / data[0], run / data[0])


def test_rerun_removes_what_the_run_no_longer_has(run):
    write_fake_index(run)
    folder = write_repo_folder(plan_repo(run, REPO), run / "hub")
    assert (folder / "indexes" / "dense").is_dir()
    shutil.rmtree(run / "indexes")
    write_repo_folder(plan_repo(run, REPO), folder)
    assert not (folder / "indexes").exists()
    assert "ships no index shards" in (folder / "README.md").read_text(encoding="utf-8")


def test_a_damaged_shard_is_never_published(run):
    write_fake_index(run)
    (run / "indexes/dense/minilm/zh/index.faiss").write_bytes(b"truncated")
    with pytest.raises(InputFileError) as error:
        plan_repo(run, REPO)
    assert "indexes/dense/minilm/zh/index.faiss has 9 bytes" in error.value.message
    assert "m4build index" in error.value.hint


def test_a_run_folder_without_corpus_is_refused(tmp_path, monkeypatch, capsys):
    code, _, err = cli(monkeypatch, capsys, "push", str(tmp_path), "--repo", REPO, "--dry-run")
    assert code == 3
    assert "holds no finished corpus" in err and "m4build corpus" in err


def test_a_foreign_folder_is_not_overwritten(run, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError, match="not made by m4build push"):
        write_repo_folder(plan_repo(run, REPO), mine)
    assert (mine / "notes.txt").read_text() == "keep me"


# -- the upload ----------------------------------------------------------------------------------


class FakeHub:
    """Stands in for the Hub at the HfApi boundary and records every call."""

    def __init__(self, public_repo: bool = False, fail_upload: Exception | None = None):
        self.calls: list[tuple[str, tuple, dict]] = []
        self.uploaded: list[str] = []
        self.public_repo = public_repo
        self.fail_upload = fail_upload

    def install(self, monkeypatch) -> None:
        hub = self

        def create_repo(api, *args, **kwargs):
            hub.calls.append(("create_repo", args, {**kwargs, "endpoint": api.endpoint, "token": api.token}))

        def create_branch(api, *args, **kwargs):
            hub.calls.append(("create_branch", args, kwargs))

        def repo_info(api, *args, **kwargs):
            hub.calls.append(("repo_info", args, kwargs))
            return type("Info", (), {"private": not hub.public_repo})()

        def upload_folder(api, **kwargs):
            hub.calls.append(("upload_folder", (), kwargs))
            if hub.fail_upload:
                raise hub.fail_upload
            folder = Path(kwargs["folder_path"])
            present = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
            ignored = kwargs["ignore_patterns"] + DEFAULT_IGNORE_PATTERNS
            hub.uploaded.extend(filter_repo_objects(present, ignore_patterns=ignored))
            return type(
                "Commit", (), {"commit_url": f"{api.endpoint}/datasets/{kwargs['repo_id']}/commit/abc"}
            )()

        for name, fake in [
            ("create_repo", create_repo),
            ("create_branch", create_branch),
            ("repo_info", repo_info),
            ("upload_folder", upload_folder),
        ]:
            monkeypatch.setattr(HfApi, name, fake)

    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]


@pytest.fixture
def hub(monkeypatch) -> FakeHub:
    fake = FakeHub()
    fake.install(monkeypatch)
    monkeypatch.setattr("huggingface_hub.get_token", lambda: "hf_test_token")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    return fake


def test_push_creates_the_repo_and_branch_then_uploads_the_folder(run, hub, monkeypatch, capsys):
    index = write_fake_index(run)
    code, out, err = cli(
        monkeypatch, capsys, "push", str(run), "--repo", REPO, "--private", "--revision", "v1"
    )
    assert code == 0, err
    assert hub.names() == ["create_repo", "repo_info", "create_branch", "upload_folder"]
    _, args, kwargs = hub.calls[0]
    assert args == (REPO,)
    assert kwargs == {
        "repo_type": "dataset",
        "private": True,
        "exist_ok": True,
        "endpoint": "http://127.0.0.1:9",
        "token": "hf_test_token",
    }
    assert hub.calls[2][2] == {"branch": "v1", "repo_type": "dataset", "exist_ok": True}
    upload = hub.calls[3][2]
    assert upload["repo_id"] == REPO and upload["repo_type"] == "dataset" and upload["revision"] == "v1"
    assert Path(upload["folder_path"]) == run / "hub"
    assert upload["delete_patterns"] == ["data/*", "indexes/*"]
    data = sorted(p.relative_to(run).as_posix() for p in (run / "data").rglob("*.parquet"))
    index_paths = [
        "indexes/manifest.json",
        *(f["path"] for lang in index["languages"].values() for f in lang["files"]),
    ]
    assert hub.uploaded == sorted(["README.md", "manifest.json", "failures.jsonl", *data, *index_paths])
    assert "pushed: http://127.0.0.1:9/datasets/my-lab/m4rag-worldcuisines/commit/abc" in out


def test_public_push_to_main_skips_branch_and_visibility_checks(run, hub, monkeypatch, capsys):
    code, _, err = cli(monkeypatch, capsys, "push", str(run), "--repo", REPO)
    assert code == 0, err
    assert hub.names() == ["create_repo", "upload_folder"]
    assert hub.calls[0][2]["private"] is None and hub.calls[1][2]["revision"] is None


def test_no_token_is_a_config_error_before_any_work(run, hub, monkeypatch, capsys):
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)
    code, _, err = cli(monkeypatch, capsys, "push", str(run), "--repo", REPO)
    assert code == 4
    assert "no Hugging Face token" in err and "HF_TOKEN" in err and "hf auth login" in err
    assert hub.calls == [] and not (run / "hub").exists()


def test_private_push_into_an_existing_public_repo_is_refused(run, hub, monkeypatch, capsys):
    hub.public_repo = True
    code, _, err = cli(monkeypatch, capsys, "push", str(run), "--repo", REPO, "--private")
    assert code == 2 and "already exists and is public" in err
    assert "upload_folder" not in hub.names()


def hub_http_error(status: int, message: str) -> HfHubHTTPError:
    request = httpx2.Request("POST", "http://127.0.0.1:9/api/datasets/x/commit/main")
    return HfHubHTTPError(message, response=httpx2.Response(status, request=request), server_message=message)


@pytest.mark.parametrize(
    ("status", "exit_code", "words"),
    [(500, 5, "Run the same command again"), (401, 4, "HF_TOKEN"), (403, 4, "write access")],
)
def test_hub_errors_become_one_clear_message(run, hub, monkeypatch, capsys, status, exit_code, words):
    hub.fail_upload = hub_http_error(status, "server says no")
    code, _, err = cli(monkeypatch, capsys, "push", str(run), "--repo", REPO)
    assert code == exit_code
    assert "server says no" in err and words in err and "Traceback" not in err


def test_a_failed_upload_reruns_on_the_same_folder(run, hub, monkeypatch, capsys):
    hub.fail_upload = ConnectionError("connection reset")
    code, _, err = cli(monkeypatch, capsys, "push", str(run), "--repo", REPO)
    assert code == 5 and "could not reach the Hub at http://127.0.0.1:9" in err
    first = hub.calls[-1][2]["folder_path"]
    hub.fail_upload = None
    code, _, err = cli(monkeypatch, capsys, "push", str(run), "--repo", REPO)
    assert code == 0, err
    # Same folder, so huggingface_hub finds its own upload bookkeeping there and resumes.
    assert hub.calls[-1][2]["folder_path"] == first


def test_bad_repo_id_is_refused(run, hub, monkeypatch, capsys):
    code, _, err = cli(monkeypatch, capsys, "push", str(run), "--repo", "no-namespace")
    assert code == 2 and "org/name" in err
    assert hub.calls == []


def test_an_assembly_killed_midway_is_finished_by_the_rerun(run, monkeypatch):
    write_fake_index(run)
    plan = plan_repo(run, REPO)
    real_place = repo_module.place
    placed = []

    def place_then_die(source: Path, target: Path) -> None:
        if len(placed) == 2:
            raise KeyboardInterrupt
        placed.append(target)
        real_place(source, target)

    monkeypatch.setattr(repo_module, "place", place_then_die)
    with pytest.raises(KeyboardInterrupt):
        write_repo_folder(plan, run / "hub")
    monkeypatch.setattr(repo_module, "place", real_place)
    write_repo_folder(plan, run / "hub")  # not refused as a foreign folder
    assert json.loads((run / "hub" / MARKER).read_text()) == plan.paths
    assert all((run / "hub" / path).is_file() for path in plan.paths)
