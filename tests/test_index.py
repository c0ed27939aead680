"""``m4build index`` and ``m4build search`` with the real all-MiniLM-L6-v2 on a corpus from the
embedded sample: known questions find their section among distractors, in English (dense, hybrid)
and in Chinese (BM25 over character bigrams); then the CLI end to end in subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from index_support import copy_run, minilm_path, sample_corpus, tiny_e5

import m4build
from m4build.recipes import load_recipe
from m4build.retrieval.build import IndexJob, build_index

MATRYOSHKA_PAGE = 331080


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("index")


@pytest.fixture(scope="module")
def indexed(base) -> Path:
    """en with dense + BM25 (MiniLM), zh with BM25 only: two runs of the pipeline on one folder."""
    run = copy_run(sample_corpus(base), base / "run")
    recipe = load_recipe("index")
    recipe["dense"]["model"] = minilm_path()
    build_index(IndexJob(run=run, recipe=recipe, languages=["en"]))
    build_index(IndexJob(run=run, recipe=recipe, languages=["zh"], dense=False))
    return run


def test_manifest_describes_layout_model_and_shards(indexed):
    manifest = json.loads((indexed / "indexes" / "manifest.json").read_text())
    assert manifest["format"] == "m4build-index/1"
    assert manifest["dense"]["model"] == minilm_path() and manifest["dense"]["dimension"] == 384
    assert manifest["dense"]["revision"].startswith("sha256:") and manifest["dense"]["metric"] == "ip"
    assert manifest["dense"]["family"] == "sentence-transformers" and manifest["dense"]["query_prefix"] == ""
    assert manifest["chunking"]["size"] == 256 and manifest["chunking"]["overlap"] == 32
    assert sorted(manifest["languages"]) == ["en", "zh"]
    kinds = {
        lang: sorted({f["kind"] for f in entry["files"]}) for lang, entry in manifest["languages"].items()
    }
    assert kinds == {"en": ["bm25", "dense", "ids", "passages"], "zh": ["bm25", "ids", "passages"]}
    slug = manifest["dense"]["model_slug"]
    for entry in manifest["languages"]["en"]["files"]:
        assert (indexed / entry["path"]).is_file()
    dense = next(f for f in manifest["languages"]["en"]["files"] if f["kind"] == "dense")
    assert dense["path"] == f"indexes/dense/{slug}/en/index.faiss" and dense["index_type"] == "flat"
    assert dense["vectors"] == manifest["languages"]["en"]["passages"]


def test_a_known_question_finds_its_section_among_distractors(indexed):
    searcher = m4build.load_index(indexed, "en")
    assert searcher.modes == ["dense", "bm25", "hybrid"]
    for mode in ("dense", "hybrid"):
        hits = searcher.search(["Russian nesting doll painted wooden figures"], k=3, mode=mode)[0]
        assert [hit.rank for hit in hits] == [1, 2, 3]
        assert any(hit.page_id == MATRYOSHKA_PAGE for hit in hits), (mode, hits)
        assert hits[0].title == "Matryoshka doll" and hits[0].id.startswith(f"enwiki:{MATRYOSHKA_PAGE}:")
    grape = searcher.search("grapevine genus of flowering plants", k=3)[0]
    assert grape[0].title == "Vitis"


def test_bm25_in_chinese_matches_character_bigrams(indexed):
    searcher = m4build.load_index(indexed, "zh")
    assert searcher.modes == ["bm25"]
    hits = searcher.search("中国的首都", k=5)[0]
    assert hits and all(hit.wiki == "zhwiki" for hit in hits)
    assert any("首都" in hit.text for hit in hits[:3])
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert searcher.search("中国的首都", k=5)[0] == hits  # deterministic


def test_separate_english_and_native_shards_answer_one_query_each(indexed):
    en, zh = m4build.load_index(indexed, "en"), m4build.load_index(indexed, "zh")
    assert en.search("matryoshka", k=1, mode="bm25")[0][0].language == "en"
    assert zh.search("中国", k=1)[0][0].language == "zh"


# -- the CLI ----------------------------------------------------------------------------------------


def m4build_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "m4build", *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


@pytest.mark.slow
def test_cli_index_then_search(base):
    run = copy_run(sample_corpus(base), base / "cli-run")
    model = tiny_e5(base)  # the CLI path is what is tested here; retrieval quality is tested above
    built = m4build_cli("index", str(run), "--model", str(model), "--lang", "en", "--batch-size", "16")
    assert built.returncode == 0, built.stderr
    assert "Index finished" in built.stdout and "query prefix 'query: '" in built.stdout
    found = m4build_cli(
        "search", str(run), "--lang", "en", "--k", "2", "--mode", "bm25", "Russian nesting doll"
    )
    assert found.returncode == 0, found.stderr
    assert "Matryoshka doll" in found.stdout and f"enwiki:{MATRYOSHKA_PAGE}:" in found.stdout
    hybrid = m4build_cli("search", str(run), "--lang", "en", "squirrel", "doll")
    assert hybrid.returncode == 0 and hybrid.stdout.count("[hybrid]") == 2

    missing = m4build_cli("search", str(run), "--lang", "de", "x")
    assert missing.returncode == 2 and "Available languages: en" in missing.stderr
    empty = m4build_cli("index", str(base / "no-such-run"), "--model", str(model))
    assert empty.returncode == 3 and "has no corpus" in empty.stderr and "Traceback" not in empty.stderr
