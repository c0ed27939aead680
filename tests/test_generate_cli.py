"""``m4build generate`` in a subprocess against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.servers.chat import ChatServer, Script, answer, error

pytestmark = pytest.mark.slow

KEY = "sk-loopback-secret-0123456789"
PROMPT = """{#-
version: 1
source: written for the m4build tests
description: names the cuisine of a dish
variables: [dish]
-#}
{% block system %}You are a food expert.{% endblock %}
{% block user %}Which cuisine is {{ dish }} from? Answer as JSON.{% endblock %}
"""
SCHEMA = {"type": "object", "properties": {"cuisine": {"type": "string"}}, "required": ["cuisine"]}
DISHES = ["sushi", "pho", "tacos", "injera", "borscht", "paella"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "prompts" / "food").mkdir(parents=True)
    (tmp_path / "prompts" / "food" / "cuisine.jinja").write_text(PROMPT)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    rows = [json.dumps({"id": dish, "dish": dish}) for dish in DISHES]
    (tmp_path / "rows.jsonl").write_text("\n".join(rows) + "\n")
    return tmp_path


def cuisine_script(**overrides) -> Script:
    rules = {dish: [answer(json.dumps({"cuisine": f"cuisine of {dish}"}))] for dish in DISHES}
    return Script({**rules, **overrides})


def args(server: ChatServer, workspace: Path, out: str, *extra: str) -> list[str]:
    return [
        "generate", "food/cuisine",
        "--input", str(workspace / "rows.jsonl"),
        "--out", str(workspace / out),
        "--schema", str(workspace / "schema.json"),
        "--prompts-dir", str(workspace / "prompts"),
        "--provider", "openai-compatible",
        "--base-url", server.openai_url,
        "--model", "tiny-chat",
        "--llm-cache", str(workspace / "llm.sqlite"),
        *extra,
    ]  # fmt: skip


def m4build(arguments: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "COLUMNS": "200", "OPENAI_API_KEY": KEY, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "m4build", *arguments], capture_output=True, text=True, env=full_env, timeout=120
    )


def outputs(run: Path) -> dict[str, dict]:
    return {row["id"]: row for row in pq.read_table(run / "data" / "generations.parquet").to_pylist()}


def test_generates_validated_answers_with_provenance_and_resumes_for_free(workspace):
    with ChatServer(cuisine_script()) as server:
        first = m4build(args(server, workspace, "run"))
        assert first.returncode == 0, first.stderr
        sent = len(server.answered())
        again = m4build(args(server, workspace, "run"))
        fresh_folder = m4build(args(server, workspace, "run2"))
        assert len(server.answered()) == sent == len(DISHES)
    assert again.returncode == 0 and "resumed" in again.stdout
    rows = outputs(workspace / "run")
    assert json.loads(rows["pho"]["output"]) == {"cuisine": "cuisine of pho"}
    assert rows["pho"]["prompt"] == "food/cuisine" and rows["pho"]["prompt_version"] == "1"
    assert rows["pho"]["model"] == "tiny-chat" and rows["pho"]["error"] is None
    # a new run folder over the same cache answers everything from the cache
    assert fresh_folder.returncode == 0
    assert all(row["cached"] for row in outputs(workspace / "run2").values())
    manifest = json.loads((workspace / "run2" / "manifest.json").read_text())
    usage = manifest["attempts"][-1]["usage"]["models"]["openai-compatible/tiny-chat"]
    assert usage["cache_hits"] == len(DISHES) and usage["requests"] == 0
    assert manifest["status"] == "complete" and manifest["prompt"]["source"] == "written for the m4build tests"


def test_the_api_key_is_written_nowhere(workspace):
    with ChatServer(cuisine_script()) as server:
        result = m4build(args(server, workspace, "run"))
        headers = {name.lower(): value for name, value in server.answered()[0].headers.items()}
        assert headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in result.stdout + result.stderr
    for path in workspace.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_budget_stop_keeps_finished_rows_and_a_rerun_pays_only_for_the_rest(workspace):
    priced = ["--price-in", "1000", "--price-out", "1000", "--max-tokens", "50", "--concurrency", "1"]
    with ChatServer(cuisine_script()) as server:
        stopped = m4build(args(server, workspace, "run", *priced, "--max-cost", "0.1"))
        paid_first = len(server.answered())
        finished = m4build(args(server, workspace, "run", *priced, "--max-cost", "1"))
        paid_second = len(server.answered()) - paid_first
    assert stopped.returncode == 1 and "--max-cost" in stopped.stderr, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert 0 < paid_first < len(DISHES) and paid_first + paid_second == len(DISHES)
    assert finished.returncode == 0 and len(outputs(workspace / "run")) == len(DISHES)
    manifest = json.loads((workspace / "run" / "manifest.json").read_text())
    assert [attempt["stopped"] for attempt in manifest["attempts"]] == ["BudgetExceeded", None]
    assert manifest["cost_usd_total"] <= 1.0


def test_kill_and_rerun_loses_and_repeats_nothing(workspace):
    def slow(call):
        time.sleep(0.3)
        return cuisine_script()(call)

    with ChatServer(slow) as server:
        arguments = args(server, workspace, "run", "--concurrency", "1")
        env = {**os.environ, "OPENAI_API_KEY": KEY}
        process = subprocess.Popen(
            [sys.executable, "-m", "m4build", *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        deadline = time.monotonic() + 60
        while len(server.answered()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        before = len(server.answered())
        resumed = m4build(arguments)
        after = len(server.answered())
    assert resumed.returncode == 0, resumed.stderr
    rows = outputs(workspace / "run")
    assert sorted(rows) == sorted(DISHES)
    # answers received before the kill came from the cache; at most the one in flight was asked again
    assert after - before <= len(DISHES) - before + 1 and after <= len(DISHES) + 1


def test_a_transient_failure_is_recorded_and_retried_on_the_next_run(workspace):
    script = cuisine_script(tacos=[error(503), error(503), answer('{"cuisine": "Mexican"}')])
    with ChatServer(script) as server:
        failed = m4build(args(server, workspace, "run", "--max-retries", "1"))
        requests_first = len(server.answered())
        fixed = m4build(args(server, workspace, "run", "--max-retries", "1"))
        requests_second = len(server.answered()) - requests_first
    assert failed.returncode == 1 and "tacos" in failed.stdout
    assert requests_first == len(DISHES) + 1 and requests_second == 1
    assert fixed.returncode == 0 and json.loads(outputs(workspace / "run")["tacos"]["output"]) == {"cuisine": "Mexican"}


def test_input_mistakes_stop_before_any_request(workspace):
    (workspace / "bad.jsonl").write_text('{"id": "a", "dish": "x"}\n{"id": "b"}\n')
    with ChatServer(cuisine_script()) as server:
        missing_variable = m4build([*args(server, workspace, "run"), "--input", str(workspace / "bad.jsonl")])
        unknown_prompt = m4build(["generate", "food/nope", *args(server, workspace, "run")[2:]])
        no_key = m4build(
            ["generate", "food/cuisine", "--input", str(workspace / "rows.jsonl"), "--out", str(workspace / "r"),
             "--prompts-dir", str(workspace / "prompts"), "--provider", "openai", "--model", "gpt-4o-mini"],
            env={"OPENAI_API_KEY": ""},
        )  # fmt: skip
        assert server.answered() == []
    assert missing_variable.returncode == 3 and "line 2" in missing_variable.stderr
    assert "dish" in missing_variable.stderr
    assert unknown_prompt.returncode == 2 and "food/cuisine" in unknown_prompt.stderr
    assert no_key.returncode == 4 and "OPENAI_API_KEY" in no_key.stderr
    for result in (missing_variable, unknown_prompt, no_key):
        assert "Traceback" not in result.stderr
