"""``m4build eval m4rag`` end to end on the embedded sample, against a scripted loopback VLM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from m4build.cli.app import app
from m4build.errors import InputFileError, UsageError
from m4build.eval.m4rag.images import file_name
from m4build.eval.m4rag.items import load_eval_items
from tests.index_support import minilm_path, sample_corpus, tiny_clip
from tests.servers.chat import ChatCall, ChatServer, Reply, answer

pytestmark = pytest.mark.slow

LANGS = ["en", "zh_cn"]
ITEMS = load_eval_items("worldcuisines", LANGS)
GOLD = {item.question: item for item in ITEMS}
TEXT_SETTINGS = "no-rag,no-rag-multilingual-prompt,oracle,oracle-multilingual,text-rag-oracle-query,text-rag-caption-query"


def vlm(call: ChatCall) -> Reply:
    """A VLM with habits the scores can be worked out from (see test_scores_match_hand_worked_values)."""
    text = call.first_user_text
    if "dense image captioning" in text:
        return answer("A plate of food on a wooden table.")
    if text.startswith("Translate"):
        return answer("翻译：" + text.rsplit("Text:\n", 1)[-1])
    if "expert evaluator" in text:
        score = 5 if "The description of the dish" in text or "翻译" in text else 2
        return answer(json.dumps({"explanation": "scripted", "answer": score}))
    item = next(item for question, item in GOLD.items() if f"\n{question}\n" in text)
    wrong = item.gold_option % len(item.options) + 1
    if "The description of the dish" in text or "翻译" in text:  # oracle settings: always right
        return answer(json.dumps({"explanation": "the description says so", "answer": item.gold_option}))
    if item.lang != "en":  # wrong in Chinese, with or without retrieved passages
        return answer(json.dumps({"explanation": "guess", "answer": wrong}))
    if item.item_id.endswith("/49/en") and "### Context" not in text:
        return answer("<think>Is it 3? Maybe 1.</think>I cannot tell from the picture.")
    return answer(f"```json\n{json.dumps({'explanation': 'I know this dish', 'answer': item.gold_option})}\n```")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("eval")
    corpus = sample_corpus(base)
    app(["index", str(corpus), "--model", minilm_path()], standalone_mode=False)
    images = base / "images"
    images.mkdir()
    for item in ITEMS:
        name = file_name(item.image_url)
        Image.new("RGB", (16, 16), (len(name) * 9 % 256, 90, 40)).save(images / name, format="JPEG")
    return base


def evaluate(workspace: Path, server: ChatServer, out: str, *extra: str) -> dict:
    app(
        ["eval", "m4rag", "--dataset", "worldcuisines", "--lang", ",".join(LANGS),
         "--corpus", str(workspace / "sample-corpus"), "--images", str(workspace / "images"),
         "--provider", "openai-compatible", "--base-url", server.openai_url, "--model", "tiny-vlm",
         "--llm-cache", str(workspace / f"{out}.sqlite"), "--out", str(workspace / out), *extra],
        standalone_mode=False,
    )  # fmt: skip
    return json.loads((workspace / out / "scores.json").read_text())


@pytest.fixture(scope="module")
def full_run(workspace) -> tuple[dict, int]:
    with ChatServer(vlm) as server:
        scores = evaluate(workspace, server, "run", "--setting", TEXT_SETTINGS, "--judge-model", "tiny-judge")
        return scores, server.answered()


def test_scores_match_hand_worked_values(full_run):
    scores, _calls = full_run
    no_rag = scores["settings"]["no-rag"]["accuracy"]
    # no-rag: en right on 225 (type 3), 231 (type 1), 385 (type 2); 49/en (type 1) unparsable; zh all wrong.
    assert no_rag["micro"] == pytest.approx(3 / 8) and no_rag["unparsable"] == 1
    # macro: type 3 (1 + 0)/2, type 1 (1/2 + 0)/2, type 2 (1 + 0)/2 -> (0.5 + 0.25 + 0.5)/3
    assert no_rag["macro"] == pytest.approx((0.5 + 0.25 + 0.5) / 3)
    assert scores["settings"]["oracle"]["accuracy"]["micro"] == 1.0
    assert scores["settings"]["oracle-multilingual"]["accuracy"]["micro"] == 1.0
    # oracle: the 3 right stay right (retention 3/3), the 5 wrong are all corrected (5/5)
    assert scores["rag_effect"]["oracle"]["retention"] == 1.0 and scores["rag_effect"]["oracle"]["correction"] == 1.0
    # text RAG: en right (49/en now parsed and right), zh still wrong: correction 1/5
    text_rag = scores["rag_effect"]["text-rag-oracle-query"]
    assert (text_rag["retention"], text_rag["correction"]) == (1.0, pytest.approx(1 / 5))
    # judge: oracle contexts score 5, retrieved passages 2
    assert scores["judge"]["oracle"]["mean"] == 5.0 and scores["judge"]["text-rag-oracle-query"]["mean"] == 2.0
    assert scores["judge"]["text-rag-oracle-query"]["pairs"] == 8 * 5
    prompt_change = scores["languages"]["prompt"]["zh_cn"]
    assert prompt_change["english"] == 0.0 and prompt_change["change"] == 0.0


def test_predictions_keep_raw_output_parse_passages_and_prompt_version(full_run, workspace):
    rows = pq.read_table(workspace / "run" / "predictions.parquet").to_pylist()
    assert len(rows) == 6 * len(ITEMS)
    unparsable = next(r for r in rows if r["setting"] == "no-rag" and r["item_id"].endswith("/49/en"))
    assert unparsable["parsed_option"] is None and "cannot tell" in unparsable["raw_output"]
    retrieved = next(r for r in rows if r["setting"] == "text-rag-oracle-query" and r["lang"] == "zh_cn")
    assert retrieved["passage_ranks"] == [1, 2, 3, 4, 5] and len(set(retrieved["passage_ids"])) == 5
    assert all(re.fullmatch(r"(en|zh)wiki:\d+:\d+:\d+:\d+", pid) for pid in retrieved["passage_ids"])
    assert retrieved["prompt"] == "m4rag/inference" and retrieved["prompt_version"] == "1"
    oracle = next(r for r in rows if r["setting"] == "oracle-multilingual" and r["lang"] == "zh_cn")
    assert oracle["context"][0].startswith("翻译：The description of the dish:")


def test_images_reach_the_model_and_artefacts_are_kept(full_run, workspace):
    _scores, calls = full_run
    with_image = [call for call in calls if not call.first_user_text.startswith("Translate")]  # all but translations
    assert len(with_image) > len(ITEMS) and all(len(call.images) == 1 for call in with_image)
    assert {call.images[0][0] for call in with_image} == {"image/jpeg"}
    captions = pq.read_table(workspace / "run" / "artefacts" / "captions.parquet").to_pylist()
    assert {row["text"] for row in captions} == {"A plate of food on a wooden table."}
    assert captions[0]["prompt"] == "m4rag/caption"
    retrieval = pq.read_table(workspace / "run" / "artefacts" / "retrieval-text-rag-caption-query.parquet")
    assert retrieval.num_rows == len(ITEMS)


def test_report_and_plots_are_written(full_run, workspace):
    report = (workspace / "run" / "report.md").read_text()
    assert "| no-rag | 8 | 8 |" in report and "## RAG against no-rag" in report
    assert "| text-rag-oracle-query | 8 | 8 | 50.0 | 50.0 | 0 | 0 | 0 |" in report  # en and zh both have shards
    for plot in ("accuracy_by_setting", "retention_by_judge_score", "language_change"):
        assert (workspace / "run" / "plots" / f"{plot}.png").read_bytes().startswith(b"\x89PNG")


def test_an_identical_run_is_reused_and_a_changed_one_is_not(full_run, workspace):
    with ChatServer(vlm) as server:
        evaluate(workspace, server, "run", "--setting", TEXT_SETTINGS, "--judge-model", "tiny-judge")
        assert server.answered() == []  # every setting reused, nothing asked
        evaluate(workspace, server, "run", "--setting", "no-rag,text-rag-oracle-query", "--k", "3", "--judge-model", "tiny-judge")
        asked = server.answered()
    folders = sorted(p.name for p in (workspace / "run").glob("text-rag-oracle-query-*"))
    assert len(folders) == 2  # k changed: a new folder beside the old one
    assert asked and all("### Context" in call.first_user_text or "expert evaluator" in call.first_user_text for call in asked)


def test_mm_rag_retrieves_with_image_and_question_from_a_multimodal_shard(workspace):
    clip = tiny_clip(workspace / "clip", seed=0)
    with ChatServer(vlm) as server:
        scores = evaluate(workspace, server, "mm", "--setting", "no-rag,mm-rag", "--mm-encoder", str(clip))
        evaluate(workspace, server, "mm", "--setting", "no-rag,mm-rag", "--mm-encoder", str(clip))
        assert len(server.answered()) == 2 * len(ITEMS)  # the rerun reused both settings
    rows = [r for r in pq.read_table(workspace / "mm" / "predictions.parquet").to_pylist() if r["setting"] == "mm-rag"]
    assert len(rows) == len(ITEMS) and all(r["passage_ranks"] == [1, 2, 3, 4, 5] for r in rows)
    shards = {p.parent.name for p in (workspace / "sample-corpus" / "indexes" / "multimodal").glob("*/*/manifest.json")}
    assert shards == {"en", "zh"}
    # the scripted VLM is right in English and wrong in Chinese whenever it is given passages
    assert scores["settings"]["mm-rag"]["accuracy"]["micro"] == 0.5
    manifest = json.loads(next((workspace / "mm").glob("mm-rag-*/manifest.json")).read_text())
    assert manifest["multimodal"]["encoder"]["model"] == str(clip)


def test_kill_and_rerun_evaluates_no_item_twice(workspace):
    def slow(call: ChatCall) -> Reply:
        time.sleep(0.25)
        return vlm(call)

    with ChatServer(slow) as server:
        arguments = [
            sys.executable, "-m", "m4build", "eval", "m4rag", "--dataset", "worldcuisines", "--lang", ",".join(LANGS),
            "--setting", "no-rag", "--images", str(workspace / "images"), "--provider", "openai-compatible",
            "--base-url", server.openai_url, "--model", "slow-vlm", "--concurrency", "1",
            "--llm-cache", str(workspace / "kill.sqlite"), "--out", str(workspace / "killed"),
        ]  # fmt: skip
        process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.answered()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        before = len(server.answered())
        rerun = subprocess.run(arguments, capture_output=True, text=True, timeout=240)
        after = len(server.answered())
    assert rerun.returncode == 0, rerun.stderr
    rows = pq.read_table(next((workspace / "killed").glob("no-rag-*")) / "predictions.parquet").to_pylist()
    assert sorted(row["item_id"] for row in rows) == sorted(item.item_id for item in ITEMS)
    assert after - before <= len(ITEMS) - before + 1  # answers received before the kill came from the cache


def test_bad_input_is_named(workspace, tmp_path):
    with ChatServer(vlm) as server:
        with pytest.raises(InputFileError, match="8 of 8 items have no image"):
            app(["eval", "m4rag", "--dataset", "worldcuisines", "--lang", ",".join(LANGS), "--setting", "no-rag",
                 "--images", str(tmp_path), "--provider", "openai-compatible", "--base-url", server.openai_url,
                 "--model", "m", "--out", str(tmp_path / "out")], standalone_mode=False)  # fmt: skip
        with pytest.raises(UsageError, match="need the published corpus"):
            app(["eval", "m4rag", "--dataset", "worldcuisines", "--setting", "oracle,text-rag-oracle-query",
                 "--provider", "openai-compatible", "--base-url", server.openai_url, "--model", "m",
                 "--out", str(tmp_path / "out")], standalone_mode=False)  # fmt: skip
        with pytest.raises(UsageError, match="built for worldcuisines, not cvqa"):
            app(["eval", "m4rag", "--dataset", "cvqa", "--setting", "text-rag-oracle-query",
                 "--corpus", str(workspace / "sample-corpus"), "--provider", "openai-compatible",
                 "--base-url", server.openai_url, "--model", "m", "--out", str(tmp_path / "out")], standalone_mode=False)  # fmt: skip
        with pytest.raises(UsageError, match="Valid settings"):
            app(["eval", "m4rag", "--dataset", "worldcuisines", "--setting", "rag", "--provider", "openai-compatible",
                 "--base-url", server.openai_url, "--model", "m", "--out", str(tmp_path / "out")], standalone_mode=False)  # fmt: skip
        assert server.answered() == []
