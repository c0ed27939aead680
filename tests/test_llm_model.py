"""The model layer end to end: the real openai and google-genai SDKs against a loopback server."""

from __future__ import annotations

import threading

import pydantic
import pytest

from m4build.backoff import Backoff
from m4build.errors import ConfigError
from m4build.llm.cache import ResponseCache
from m4build.llm.config import ModelConfig
from m4build.llm.costs import BudgetExceeded
from m4build.llm.messages import ImagePart, Message
from m4build.llm.model import GenerationRequest, LanguageModel, ModelError
from m4build.llm.prompts import parse_prompt
from m4build.llm.structured import OutputSchema
from tests.servers.chat import HANG, MALFORMED, ChatServer, Script, answer, error

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PROVIDERS = ("openai-compatible", "gemini")
KEY = "sk-test-secret-key-never-logged"


class Choice(pydantic.BaseModel):
    answer: int = pydantic.Field(ge=1, le=4)


class FastBackoff(Backoff):
    """Real backoff rules, scaled down to keep the tests quick; Retry-After floors are recorded."""

    def __init__(self) -> None:
        super().__init__(base=0.01, cap=0.05)
        self.asked: list[float | None] = []

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        self.asked.append(retry_after)
        return super().delay(retry, None)


def open_model(server: ChatServer, provider: str, tmp_path, max_cost=None, **settings) -> LanguageModel:
    url = server.openai_url if provider == "openai-compatible" else server.url
    config = ModelConfig(provider=provider, model="tiny-vlm", base_url=url, timeout_s=1.5, **settings)
    model = LanguageModel.open(
        config,
        cache=ResponseCache(tmp_path / "cache.sqlite"),
        max_cost_usd=max_cost,
        environ={"GEMINI_API_KEY": KEY, "OPENAI_API_KEY": KEY},
    )
    model._backoff = FastBackoff()
    return model


def ask(text: str, *images: bytes) -> GenerationRequest:
    return GenerationRequest(
        (Message.user(text, images=[ImagePart.from_bytes(i) for i in images]),), OutputSchema.of(Choice)
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reasoning_and_fenced_json_are_read_past(provider, tmp_path):
    script = Script({"q1": [answer('<think>maybe {"answer": 9}</think>\n```json\n{"answer": 3}\n```')]})
    with ChatServer(script) as server:
        result = open_model(server, provider, tmp_path).generate(ask("q1"))
    assert result.ok and result.value == Choice(answer=3)
    assert result.attempts == 1 and not result.cached


@pytest.mark.parametrize("provider", PROVIDERS)
def test_invalid_answers_are_repaired_within_bounds(provider, tmp_path):
    script = Script(
        {
            "fixable": [answer("I think it's two"), answer('{"answer": 7}'), answer('{"answer": 2}')],
            "hopeless": [answer("no idea")],
        }
    )
    with ChatServer(script) as server:
        model = open_model(server, provider, tmp_path, repair_attempts=2)
        fixed = model.generate(ask("fixable"))
        failed = model.generate(ask("hopeless"))
        calls = server.answered()
    assert fixed.value == Choice(answer=2) and fixed.attempts == 3
    # the second repair turn carries the schema problem of the first repair's answer
    repair_turns = [call for call in calls if "fixable" in call.first_user_text][1:]
    assert "could not be used" in repair_turns[0].user_text
    assert "less than or equal to 4" in repair_turns[1].user_text
    assert failed.error is not None and "after 3 attempt(s)" in failed.error and failed.value is None
    usage = model.usage()["models"][f"{provider}/tiny-vlm"]
    assert usage["repairs"] == 4 and usage["failures"] == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_with_retry_after_then_5xx_then_success(provider, tmp_path):
    script = Script({"busy": [error(429, retry_after="2"), error(503), answer('{"answer": 1}')]})
    with ChatServer(script) as server:
        model = open_model(server, provider, tmp_path)
        result = model.generate(ask("busy"))
    assert result.value == Choice(answer=1)
    assert model._backoff.asked == [2.0, None]  # Retry-After was read and handed to the backoff
    assert model.usage()["models"][f"{provider}/tiny-vlm"]["retries"] == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hung_connection_and_malformed_body_are_retried(provider, tmp_path):
    script = Script({"slow": [HANG, answer('{"answer": 4}')], "garbled": [MALFORMED, answer('{"answer": 2}')]})
    with ChatServer(script) as server:
        model = open_model(server, provider, tmp_path)
        assert model.generate(ask("slow")).value == Choice(answer=4)
        assert model.generate(ask("garbled")).value == Choice(answer=2)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retries_exhausted_become_a_recorded_failure(provider, tmp_path):
    with ChatServer(Script({"down": [error(500)]})) as server:
        model = open_model(server, provider, tmp_path, max_retries=2)
        result = model.generate(ask("down"))
        assert len(server.answered()) == 3
    assert not result.ok and "gave up after 3 attempts" in result.error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_request_is_recorded_and_the_run_goes_on(provider, tmp_path):
    with ChatServer(Script({"too long": [error(400)], "fine": [answer('{"answer": 1}')]})) as server:
        model = open_model(server, provider, tmp_path)
        results = dict(model.generate_many([ask("too long"), ask("fine")]))
        assert len(server.answered()) == 2  # a 400 is not retried
    assert "HTTP 400" in results[0].error and results[1].ok


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [401, 404])
def test_fatal_errors_stop_with_provider_and_model_named(provider, status, tmp_path):
    with ChatServer(Script({}, default=error(status))) as server:
        model = open_model(server, provider, tmp_path)
        with pytest.raises(ModelError) as raised:
            list(model.generate_many([ask("a"), ask("b")]))
    assert provider in raised.value.message and "tiny-vlm" in raised.value.message
    assert raised.value.hint


@pytest.mark.parametrize("provider", PROVIDERS)
def test_images_reach_the_server_and_key_the_cache_by_content(provider, tmp_path):
    other = PNG + b"\x01"
    script = Script({"dish": [answer('{"answer": 1}'), answer('{"answer": 2}')]})
    with ChatServer(script) as server:
        model = open_model(server, provider, tmp_path)
        first = model.generate(ask("dish", PNG))
        again = model.generate(ask("dish", PNG))
        changed = model.generate(ask("dish", other))
        calls = server.answered()
    assert [call.images for call in calls] == [[("image/png", PNG)], [("image/png", other)]]
    assert (first.value.answer, again.value.answer, changed.value.answer) == (1, 1, 2)
    assert again.cached and not changed.cached


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cache_hits_after_restart_cost_nothing(provider, tmp_path):
    script = Script({"q": [answer('{"answer": 3}', prompt_tokens=100, completion_tokens=5)]})
    with ChatServer(script) as server:
        first = open_model(server, provider, tmp_path, price_input_per_million=1.0, price_output_per_million=2.0)
        paid = first.generate(ask("q"))
        first.cache.close()
        second = open_model(server, provider, tmp_path, price_input_per_million=1.0, price_output_per_million=2.0)
        free = second.generate(ask("q"))
        assert len(server.answered()) == 1
    assert paid.cost_usd == pytest.approx((100 * 1.0 + 5 * 2.0) / 1e6) and not paid.cached
    assert free.cached and free.cost_usd == 0 and free.value == paid.value
    assert second.usage()["models"][f"{provider}/tiny-vlm"]["cache_hits"] == 1


def test_a_changed_prompt_version_misses_the_cache(tmp_path):
    text = "{#-\nversion: %s\nsource: test\nvariables: [dish]\n-#}\nName the cuisine of {{ dish }}."
    v1, v2 = parse_prompt("t/cuisine", text % 1), parse_prompt("t/cuisine", text % 2)
    with ChatServer(Script({"cuisine": [answer("Japanese")]})) as server:
        model = open_model(server, "openai-compatible", tmp_path)
        results = [model.generate(GenerationRequest.from_prompt(p, {"dish": "sushi"})) for p in (v1, v1, v2)]
        assert len(server.answered()) == 2
    assert [r.cached for r in results] == [False, True, False]
    assert results[2].provenance["prompt_version"] == "2"


def test_budget_stops_cleanly_keeping_paid_results(tmp_path):
    script = Script({}, default=answer('{"answer": 1}', prompt_tokens=20, completion_tokens=10))
    with ChatServer(script) as server:
        model = open_model(
            server,
            "openai-compatible",
            tmp_path,
            max_tokens=100,
            concurrency=1,
            price_input_per_million=1000.0,
            price_output_per_million=1000.0,
            max_cost=0.2,
        )
        kept = []
        with pytest.raises(BudgetExceeded) as stopped:
            for index, result in model.generate_many(ask(f"item {i}") for i in range(10)):
                kept.append(index)
        sent = len(server.answered())
    # worst case per call (6 estimated prompt tokens + 100) * 1e-3 = 0.106 USD; actual (20 + 10) * 1e-3 = 0.03.
    # Before call n, 0.03 * (n - 1) is spent: n = 4 fits (0.09 + 0.106 <= 0.2), n = 5 does not (0.226).
    assert kept == list(range(sent)) and sent == 4
    assert model.meter.total_cost_usd == pytest.approx(0.12)
    assert "Everything finished so far is kept" in stopped.value.hint


def test_concurrency_is_bounded(tmp_path):
    in_flight, peak, lock = [0], [0], threading.Lock()
    release = threading.Event()

    def slow(call):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        release.wait(0.2)
        with lock:
            in_flight[0] -= 1
        return answer('{"answer": 2}')

    with ChatServer(slow) as server:
        model = open_model(server, "openai-compatible", tmp_path, concurrency=3)
        results = list(model.generate_many(ask(f"q{i}") for i in range(9)))
    assert len(results) == 9 and peak[0] == 3


def test_the_key_never_reaches_cache_or_usage(tmp_path):
    with ChatServer(Script({}, default=answer('{"answer": 1}'))) as server:
        model = open_model(server, "gemini", tmp_path)
        model.generate(ask("q"))
        sent = server.answered()[0].headers
        model.cache.close()
    assert KEY in sent.get("x-goog-api-key", "")  # the real SDK sent it where Gemini expects it
    assert KEY.encode() not in (tmp_path / "cache.sqlite").read_bytes()
    assert KEY not in repr(model.usage()) and KEY not in repr(model.config.describe())


def test_missing_key_is_caught_before_any_work():
    config = ModelConfig(provider="openai", model="gpt-4o-mini")
    with pytest.raises(ConfigError) as raised:
        LanguageModel.open(config, environ={})
    assert "OPENAI_API_KEY" in raised.value.message and "gpt-4o-mini" in raised.value.message


def test_max_cost_without_a_known_price_is_refused_up_front(tmp_path):
    config = ModelConfig(provider="gemini", model="some-new-model")
    with pytest.raises(ConfigError) as raised:
        LanguageModel.open(config, max_cost_usd=1.0, environ={"GEMINI_API_KEY": "k"})
    assert "--price-in" in raised.value.hint
