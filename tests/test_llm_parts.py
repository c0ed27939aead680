"""The model layer's parts, without a server: limits, prices, schemas, prompts, config, cache."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import time

import pydantic
import pytest

from m4build.errors import ConfigError, UsageError
from m4build.llm.cache import ResponseCache, default_cache_path, request_key
from m4build.llm.config import LOCAL_SERVER_KEY, ModelConfig, resolve_api_key
from m4build.llm.costs import Budget, BudgetExceeded, Prices, estimate_input_tokens, prices_for
from m4build.llm.limits import RateLimiter
from m4build.llm.messages import ImagePart, Message, sniff_mime_type
from m4build.llm.prompts import parse_prompt
from m4build.llm.providers.base import BadRequest, ChatResponse, FatalFailure, TransientFailure, classify_status
from m4build.llm.structured import InvalidOutput, OutputSchema, read_json
from m4build.text.reasoning import final_answer, strip_reasoning, unfence


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


# -- rate limits ---------------------------------------------------------------------------------
def test_requests_per_minute_spreads_requests_after_the_first_minute_burst():
    clock = FakeClock()
    limiter = RateLimiter(requests_per_minute=60, clock=clock, sleep=clock.sleep)
    for _ in range(60):
        assert limiter.acquire(tokens=10) == 0  # a full bucket: the minute's allowance at once
    assert limiter.acquire(tokens=10) == pytest.approx(1.0)  # then one per second
    assert limiter.acquire(tokens=10) == pytest.approx(1.0)


def test_tokens_per_minute_waits_for_enough_tokens_and_settles_on_real_usage():
    clock = FakeClock()
    limiter = RateLimiter(tokens_per_minute=600, clock=clock, sleep=clock.sleep)
    assert limiter.acquire(tokens=500) == 0
    assert limiter.acquire(tokens=200) == pytest.approx(10.0)  # 100 left, 10 tokens/s refill
    limiter.settle(estimated=200, actual=50)  # the request used less: 150 tokens come back
    assert limiter.acquire(tokens=150) == 0


def test_a_request_larger_than_the_whole_budget_waits_for_a_full_bucket_then_goes():
    clock = FakeClock()
    limiter = RateLimiter(tokens_per_minute=100, clock=clock, sleep=clock.sleep)
    limiter.acquire(tokens=100)
    assert limiter.acquire(tokens=1_000) == pytest.approx(60.0)


# -- prices and budget ---------------------------------------------------------------------------
def test_prices_come_from_flags_then_the_table_with_dated_snapshots_matching():
    table = {"openai": {"gpt-4o": {"input": 2.5, "output": 10}, "gpt-4o-mini": {"input": 0.15, "output": 0.6}}}
    assert prices_for(ModelConfig("openai", "gpt-4o-mini-2024-07-18"), table) == Prices(0.15, 0.6)
    assert prices_for(ModelConfig("openai", "gpt-4o-2024-08-06"), table) == Prices(2.5, 10)
    assert prices_for(ModelConfig("openai", "o9"), table) is None
    assert prices_for(ModelConfig("openai", "o9", price_input_per_million=1, price_output_per_million=4), table) == Prices(1, 4)
    assert prices_for(ModelConfig("openai-compatible", "qwen", base_url="http://x/v1")) == Prices(0, 0)
    with pytest.raises(ConfigError):
        prices_for(ModelConfig("openai", "o9", price_input_per_million=1), table)


def test_the_packaged_price_table_loads():
    assert prices_for(ModelConfig("openai", "gpt-4o-mini")) is not None


def test_budget_reserves_worst_cases_of_calls_in_flight():
    budget = Budget(1.0)
    budget.reserve(0.6)
    with pytest.raises(BudgetExceeded):
        budget.reserve(0.5)  # 0.6 in flight + 0.5 could pass 1.0
    budget.settle(0.6, 0.1)
    budget.reserve(0.5)
    assert budget.spent_usd == pytest.approx(0.1)


def test_token_estimate_counts_text_and_images():
    image = ImagePart.from_bytes(b"\x89PNG\r\n\x1a\n")
    assert estimate_input_tokens([Message.user("x" * 40)]) == 4 + 10
    assert estimate_input_tokens([Message.user("", images=[image])]) == 4 + 1000


# -- structured output ---------------------------------------------------------------------------
class Verdict(pydantic.BaseModel):
    label: str
    score: int


@pytest.mark.parametrize(
    "text",
    [
        '{"label": "Support", "score": 2}',
        'Sure! Here it is: {"label": "Support", "score": 2} Hope this helps.',
        '<think>Let me write {"label": "Refute"}</think>{"label": "Support", "score": 2}',
        'Reasoning first.\n```json\n{"label": "Support", "score": 2}\n```',
        '```\n{"label": "Support", "score": 2}\n```',
    ],
)
def test_json_is_found_past_chatter_reasoning_and_fences(text):
    assert OutputSchema.of(Verdict).validate(text) == Verdict(label="Support", score=2)


def test_invalid_answers_say_what_is_wrong():
    schema = OutputSchema.of(Verdict)
    with pytest.raises(InvalidOutput, match="score: Field required"):
        schema.validate('{"label": "x"}')
    with pytest.raises(InvalidOutput, match="no JSON value"):
        schema.validate('{"label": "x", "score": ')  # cut off by max_tokens
    with pytest.raises(InvalidOutput, match="empty"):
        read_json("<think>still thinking")


def test_json_schema_dicts_are_checked_and_validated():
    schema = OutputSchema.of({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert schema.validate('{"n": 3}') == {"n": 3}
    with pytest.raises(InvalidOutput, match="'n' is a required property"):
        schema.validate("{}")
    with pytest.raises(UsageError, match="not a valid JSON schema"):
        OutputSchema.of({"type": "no-such-type"})


def test_reasoning_helpers():
    assert strip_reasoning("<think>a</think> b <think>c</think> d") == "b  d"
    assert strip_reasoning("thinking without opening</think>answer") == "answer"
    assert strip_reasoning("<think>cut off") == ""
    assert unfence("```python\nx\n```\n```json\n{}\n```") == "{}"
    assert final_answer("plain") == "plain"


# -- prompts -------------------------------------------------------------------------------------
PROMPT = """{#-
version: 3
source: test
variables: [question, options]
-#}
{% block system %}Answer with a number.{% endblock %}
{% block user %}{{ question }}
{% for option in options %}{{ loop.index }}. {{ option }}
{% endfor %}{% endblock %}
"""


def test_prompt_renders_system_and_user_with_images():
    prompt = parse_prompt("t/mc", PROMPT)
    image = ImagePart.from_bytes(b"\xff\xd8\xff\xe0")
    system, user = prompt.render({"question": "Which dish?", "options": ["Sushi", "Pho"]}, [image])
    assert system.text == "Answer with a number."
    assert user.text == "Which dish?\n1. Sushi\n2. Pho" and user.images == (image,)
    assert prompt.provenance["prompt_version"] == "3" and len(prompt.provenance["prompt_sha256"]) == 16


def test_prompt_mistakes_are_named():
    with pytest.raises(ConfigError, match="front-matter"):
        parse_prompt("t/x", "Hello {{ name }}")
    with pytest.raises(ConfigError, match="version"):
        parse_prompt("t/x", "{#-\nsource: s\n-#}hi")
    with pytest.raises(ConfigError, match="line 5"):
        parse_prompt("t/x", "{#-\nversion: 1\nvariables: []\n-#}\n{% if %}")
    with pytest.raises(UsageError, match="needs options"):
        parse_prompt("t/mc", PROMPT).render({"question": "q"})


def test_an_edit_without_a_version_bump_still_changes_the_hash():
    assert parse_prompt("t/mc", PROMPT).sha256 != parse_prompt("t/mc", PROMPT.replace("number", "digit")).sha256


# -- config and keys -----------------------------------------------------------------------------
def test_keys_come_from_the_environment_only():
    assert resolve_api_key(ModelConfig("openai", "gpt-4o"), {"OPENAI_API_KEY": "a"}) == "a"
    assert resolve_api_key(ModelConfig("gemini", "g"), {"GOOGLE_API_KEY": "b"}) == "b"
    assert resolve_api_key(ModelConfig("gemini", "g"), {"GOOGLE_GENAI_USE_VERTEXAI": "true"}) is None
    local = ModelConfig("openai-compatible", "qwen", base_url="http://localhost:8000/v1")
    assert resolve_api_key(local, {}) == LOCAL_SERVER_KEY
    custom = ModelConfig("openai-compatible", "qwen", base_url="http://h/v1", api_key_env="MY_KEY")
    with pytest.raises(ConfigError, match="MY_KEY"):
        resolve_api_key(custom, {})
    with pytest.raises(ConfigError, match="never read from recipes"):
        ModelConfig.from_mapping({"provider": "openai", "model": "m", "api_key": "sk-1"})


def test_config_mistakes_are_named():
    with pytest.raises(UsageError, match="Choose one of"):
        ModelConfig("anthropic", "claude")
    with pytest.raises(UsageError, match="--base-url"):
        ModelConfig("openai-compatible", "qwen")
    with pytest.raises(ConfigError, match="temprature"):
        ModelConfig.from_mapping({"provider": "openai", "model": "m", "temprature": 0})


def test_status_codes_are_classified_alike_for_every_provider():
    assert isinstance(classify_status(429, "x", 3.0), TransientFailure)
    assert classify_status(429, "x", 3.0).retry_after == 3.0
    assert isinstance(classify_status(503, "x"), TransientFailure)
    assert isinstance(classify_status(401, "x"), FatalFailure)
    assert isinstance(classify_status(400, "x"), BadRequest)


def test_images_are_typed_by_content():
    assert sniff_mime_type(b"\x89PNG\r\n\x1a\n...") == "image/png"
    assert sniff_mime_type(b"RIFF1234WEBPVP8 ") == "image/webp"
    assert sniff_mime_type(b"????", fallback="image/jpeg") == "image/jpeg"


# -- cache ---------------------------------------------------------------------------------------
def test_cache_path_follows_the_environment(tmp_path):
    assert default_cache_path({"M4BUILD_LLM_CACHE": str(tmp_path / "c.sqlite")}) == tmp_path / "c.sqlite"
    assert default_cache_path({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "m4build" / "llm.sqlite"


def test_request_keys_depend_on_content_only():
    base = {"model": "m", "messages": [Message.user("hi").key()]}
    assert request_key(base) == request_key(dict(reversed(list(base.items()))))
    assert request_key(base) != request_key({**base, "model": "n"})


def _write_many(path: str, start: int, count: int) -> None:
    cache = ResponseCache(path)
    for number in range(start, start + count):
        cache.put(f"key-{number}", "p", "m", ChatResponse(f"answer {number}", "stop", 1, 1))


def test_concurrent_writer_processes_lose_nothing(tmp_path):
    path = str(tmp_path / "cache.sqlite")
    ResponseCache(path)
    workers = [multiprocessing.Process(target=_write_many, args=(path, i * 200, 200)) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    cache = ResponseCache(path)
    assert len(cache) == 600 and cache.get("key-599").text == "answer 599"


def _rows(path: str) -> int:
    try:
        return sqlite3.connect(path, timeout=5).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def _write_forever(path: str) -> None:
    cache = ResponseCache(path)
    number = 0
    while True:
        cache.put(f"key-{number}", "p", "m", ChatResponse("x" * 2000, "stop", 1, 1))
        number += 1


def test_a_writer_killed_mid_write_leaves_a_readable_cache(tmp_path):
    path = str(tmp_path / "cache.sqlite")
    writer = multiprocessing.Process(target=_write_forever, args=(path,))
    writer.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _rows(path) < 50:
        time.sleep(0.05)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join()
    cache = ResponseCache(path)
    count = len(cache)
    assert count >= 50 and all(cache.get(f"key-{n}").text == "x" * 2000 for n in range(count))
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
