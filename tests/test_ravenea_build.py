"""``m4build build ravenea`` on test-made images, the embedded Wikipedia sample and a scripted VLM."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

from m4build.pipelines.ravenea.candidates import annotation_order
from m4build.pipelines.ravenea.dedup import deduplicate, difference_hash
from m4build.pipelines.ravenea.inputs import ImageInstance
from m4build.pipelines.ravenea.splits import stratified_splits
from tests.ravenea_support import make_inputs, scripted_vlm
from tests.servers.chat import ChatServer

pytestmark = pytest.mark.slow


def build(images: Path, out: Path, server: ChatServer, *extra: str) -> subprocess.CompletedProcess:
    arguments = [
        sys.executable, "-m", "m4build", "build", "ravenea", "--images", str(images),
        "--metadata", str(images / "metadata.csv"), "--source", "sample", "--provider", "openai-compatible",
        "--base-url", server.openai_url, "--model", "tiny-vlm", "--llm-cache", str(out.parent / "llm.sqlite"),
        "--out", str(out), *extra,
    ]  # fmt: skip
    return subprocess.run(arguments, capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "COLUMNS": "200"})


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, int]:
    base = tmp_path_factory.mktemp("ravenea")
    images = base / "images"
    make_inputs(images)
    with ChatServer(scripted_vlm(images)) as server:
        result = build(images, base / "run", server)
        return base / "run", result, len(server.answered())


def test_duplicates_and_undecodable_images_are_reported_and_dropped(built):
    run, result, _ = built
    assert result.returncode == 1, result.stderr  # an unreadable image and a refused caption
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["dropped"] == {"exact-duplicate": 1, "near-duplicate": 1, "undecodable": 1}
    failures = [json.loads(line) for line in (run / "failures.jsonl").read_text().splitlines()]
    kinds = {(f["kind"], f.get("file_name")) for f in failures}
    assert ("undecodable", "broken.jpg") in kinds and ("caption", "dog.png") in kinds
    assert "dropped" in result.stdout and "no caption" in result.stdout and "Traceback" not in result.stderr


def test_captions_keep_model_and_prompt_version_and_refusals_are_failures(built):
    run, _, _ = built
    rows = {r["file_name"]: r for r in pq.read_table(run / "data" / "instances.parquet").to_pylist()}
    assert sorted(rows) == ["dog.png", "matryoshka-copy.png", "squirrel.png", "vines.png"]
    # matryoshka.png and matryoshka-copy.png are the same bytes: the first in name order is kept
    assert rows["squirrel.png"]["caption_model"] == "openai-compatible/tiny-vlm"
    assert rows["squirrel.png"]["caption_prompt"] == "ravenea/cultural_caption"
    assert rows["dog.png"]["generate_caption"] is None and "declined" in rows["dog.png"]["caption_error"]


def test_candidates_come_from_bm25_and_are_shuffled_for_annotation(built):
    run, _, _ = built
    candidates = pq.read_table(run / "data" / "candidates.parquet").to_pylist()
    articles = {a["enwiki_id"]: a for a in pq.read_table(run / "data" / "articles.parquet").to_pylist()}
    top = {c["file_name"]: articles[c["enwiki_id"]]["title"] for c in candidates if c["bm25_rank"] == 1}
    assert top["squirrel.png"] == "Squirrel" and top["vines.png"] == "Vitis"
    assert "dog.png" not in {c["file_name"] for c in candidates}  # no caption, no candidates
    for name in {c["file_name"] for c in candidates}:
        mine = [c for c in candidates if c["file_name"] == name]
        assert sorted(c["annotation_order"] for c in mine) == list(range(len(mine))) and len(mine) <= 10
    assert any(c["annotation_order"] != c["bm25_rank"] - 1 for c in candidates)
    assert all(len(a["text"]) > 200 for a in articles.values())


def test_the_dataset_loads_with_datasets_and_has_a_card(built):
    run, _, _ = built
    loaded = datasets.load_dataset(str(run), "default")
    rows = [row for split in loaded.values() for row in split]
    assert len(rows) == 4 and {row["split"] for row in rows} <= {"train", "validation", "test"}
    squirrel = next(row for row in rows if row["file_name"] == "squirrel.png")
    assert squirrel["options"] == ["Squirrel", "Cat", "Dog", "Fox"] and squirrel["answer"] == 0
    assert squirrel["image"].size == (96, 64)
    assert squirrel["culture_relevance"] == [None] * len(squirrel["enwiki_ids"])  # not annotated yet
    corpus = datasets.load_dataset(str(run), "corpus", split="train")
    assert set(corpus["enwiki_id"]) >= set(squirrel["enwiki_ids"])
    card = (run / "README.md").read_text()
    assert "pretty_name: RAVENEA" in card and "config_name: corpus" in card


def test_a_rerun_asks_the_model_nothing(built, tmp_path):
    run, _, asked = built
    images = run.parent / "images"
    with ChatServer(scripted_vlm(images)) as server:
        again = build(images, run, server)
        assert server.answered() == []
    assert again.returncode == 1 and "resumed" in again.stdout and asked == 4


def test_dedup_and_splits_units():
    from tests.ravenea_support import _draw, encoded

    pictures = [ImageInstance(f"{i}.png", encoded(_draw(s)), "X", "c", "cIC", "folder") for i, s in enumerate(["ellipse", "triangle"])]
    resized = encoded(_draw("triangle").resize((72, 48)), "JPEG")
    kept, dropped = deduplicate([*pictures, ImageInstance("z.jpg", resized, "X", "c", "cIC", "folder")])
    assert [k.file_name for k in kept] == ["0.png", "1.png"] and dropped[0].reason == "near-duplicate"
    assert difference_hash(encoded(_draw("grid"))) != difference_hash(encoded(_draw("ellipse")))
    names = [(f"{country}-{i}", country) for country in ("A", "B") for i in range(10)]
    splits = stratified_splits(names, {"train": 0.7, "validation": 0.1, "test": 0.2}, seed=0)
    for country in ("A", "B"):
        counts = [sum(1 for n, c in names if c == country and splits[n] == s) for s in ("train", "validation", "test")]
        assert counts == [7, 1, 2]
    assert splits == stratified_splits(list(reversed(names)), {"train": 0.7, "validation": 0.1, "test": 0.2}, seed=0)
    order = annotation_order("x.png", [5, 3, 9], seed=0)
    assert sorted(order.values()) == [0, 1, 2] and order == annotation_order("x.png", [9, 5, 3], seed=0)


def test_eval_ravenea_scores_bm25_in_both_modes_and_runs_downstream_tasks(built, tmp_path):
    import shutil

    import pyarrow as pa

    from m4build.cli.app import app
    from m4build.runs import atomic_write_parquet

    run = tmp_path / "run"
    shutil.copytree(built[0], run)
    articles = {a["enwiki_id"]: a["title"] for a in pq.read_table(run / "data" / "articles.parquet").to_pylist()}
    topic = {"matryoshka-copy.png": "Matryoshka doll", "vines.png": "Vitis", "squirrel.png": "Squirrel"}
    judged = [
        {"file_name": c["file_name"], "enwiki_id": c["enwiki_id"],
         "culture_relevance": 3 if articles[c["enwiki_id"]] == topic[c["file_name"]] else -1}
        for c in pq.read_table(run / "data" / "candidates.parquet").to_pylist()
    ]  # fmt: skip
    atomic_write_parquet(run / "annotations" / "judgments.parquet", pa.Table.from_pylist(judged))
    images = built[0].parent / "images"
    with ChatServer(scripted_vlm(images)) as server:
        app(["eval", "ravenea", str(run), "--retriever", "bm25", "--downstream", "cvqa,cic",
             "--provider", "openai-compatible", "--base-url", server.openai_url, "--model", "tiny-vlm",
             "--llm-cache", str(tmp_path / "llm.sqlite")], standalone_mode=False)  # fmt: skip
    scores = json.loads((run / "eval" / "bm25" / "scores.json").read_text())
    assert scores["queries"] == 3
    for mode in ("parity", "default"):  # the caption's own article is ranked first for every image
        assert scores["retrieval"][mode]["MRR"] == 1.0 and scores["retrieval"][mode]["P@1"] == 1.0
    trec = (run / "eval" / "bm25" / "run.trec").read_text().splitlines()
    assert trec[0].split()[1:4] == ["Q0", trec[0].split()[2], "1"] and len(trec) == len(judged)
    cvqa = scores["downstream"]["cvqa"]
    assert cvqa["without_retrieval"]["accuracy"] == 1.0 and cvqa["with_top_document"]["items"] == 1
    cic = scores["downstream"]["cic"]["without_retrieval"]
    # two cIC captions, Russia and France named; the dog image (no caption) is still a cIC image
    assert cic["region_score"]["score"] == pytest.approx(2 / 3) and "CIDEr-D" in cic["caption_metrics"]

    from tests.index_support import minilm_path, tiny_clip

    for retriever, query in ((minilm_path(), "generate_caption"), (str(tiny_clip(tmp_path / "clip", seed=0)), "image")):
        app(["eval", "ravenea", str(run), "--retriever", retriever, "--out", str(tmp_path / query)], standalone_mode=False)
        other = json.loads((tmp_path / query / "scores.json").read_text())
        assert other["retriever"]["query"] == query and other["queries"] == 3
        assert set(other["retrieval"]) == {"parity", "default"}
    # MiniLM reads the captions as well as BM25 does: each image's own article first
    assert json.loads((tmp_path / "generate_caption" / "scores.json").read_text())["retrieval"]["default"]["P@1"] == 1.0


def test_annotation_round_trip_fills_the_dataset_grades(built, tmp_path):
    import csv
    import shutil

    from m4build.cli.app import app

    run = tmp_path / "run"
    shutil.copytree(built[0], run)
    app(["annotate", "export", "ravenea", str(run), "--format", "csv", "--annotators", "2", "--out", str(tmp_path / "sheets")],
        standalone_mode=False)  # fmt: skip
    sheets = sorted((tmp_path / "sheets").glob("annotator_*.csv"))
    assert len(sheets) == 2
    topic = {"matryoshka-copy.png": "Matryoshka doll", "vines.png": "Vitis", "squirrel.png": "Squirrel"}
    for number, sheet in enumerate(sheets):
        with sheet.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        for row in rows:  # both say yes to the image's own article; on others they differ on "visual"
            own = row["title"] == topic[row["file_name"]]
            row["annotator"] = f"annotator-{number}"
            row["answer_country"] = row["answer_cultural"] = "yes" if own else "no"
            row["answer_visual"] = "yes" if own else ("no" if number == 0 else "cannot determine")
        with sheet.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    app(["annotate", "import", "ravenea", str(run), *map(str, sheets)], standalone_mode=False)
    loaded = datasets.load_dataset(str(run), "default")
    rows = {row["file_name"]: row for split in loaded.values() for row in split}
    squirrel = rows["squirrel.png"]
    grades = dict(zip(squirrel["enwiki_ids"], squirrel["culture_relevance"]))
    corpus = {row["enwiki_id"]: row["title"] for row in datasets.load_dataset(str(run), "corpus", split="train")}
    for page, grade in grades.items():
        # own article: 3 yes = +3; others: no, no, and a tie on visual (no vs cannot) -> 0: -2
        assert grade == (3 if corpus[page] == "Squirrel" else -2)
    assert json.loads((run / "manifest.json").read_text())["annotated"] is True


def test_the_build_is_publishable_with_push(built, tmp_path):
    import shutil

    from m4build.cli.app import app

    run = tmp_path / "run"
    shutil.copytree(built[0], run)
    app(["push", str(run), "--repo", "my-org/ravenea-demo", "--dry-run"], standalone_mode=False)
    hub = run / "hub"
    card = (hub / "README.md").read_text()
    assert "my-org/ravenea-demo" in card and "config_name: default" in card
    assert {p.name for p in hub.iterdir()} >= {"README.md", "manifest.json", "failures.jsonl", "data"}
    assert len(datasets.load_dataset(str(hub), "corpus", split="train")) > 0
