"""``LanguageModel``: the one way pipelines call a language or vision-language model.

It turns a prompt into validated, cached results: look the request up in the cache; otherwise
reserve the worst-case cost against the budget, wait for the rate limiter, call the provider and
retry transient failures with jittered backoff that honours ``Retry-After``; validate structured
answers and send invalid ones back for repair. A single item that cannot be answered becomes a
``Generation`` with an ``error`` (the run goes on); only a problem no request can survive (bad key,
unknown model) or the budget stops the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

import pydantic

from m4build.backoff import Backoff
from m4build.errors import ConfigError, ExitCode, M4BuildError
from m4build.llm.cache import ResponseCache, request_key
from m4build.llm.config import ModelConfig, resolve_api_key
from m4build.llm.costs import Budget, Prices, UsageMeter, estimate_input_tokens, prices_for
from m4build.llm.limits import RateLimiter
from m4build.llm.messages import ImagePart, Message
from m4build.llm.prompts import PromptTemplate
from m4build.llm.providers.base import (
    BadRequest,
    ChatRequest,
    ChatResponse,
    FatalFailure,
    ProviderClient,
    TransientFailure,
)
from m4build.llm.structured import InvalidOutput, OutputSchema, repair_request, schema_instruction


class ModelError(M4BuildError):
    """A provider problem that no request will get past: stop and fix the configuration."""

    exit_code = ExitCode.REMOTE


@dataclass(frozen=True)
class GenerationRequest:
    """One item's prompt: its messages, the schema its answer must match, and the template used."""

    messages: tuple[Message, ...]
    schema: OutputSchema | None = None
    prompt: PromptTemplate | None = None

    @classmethod
    def from_prompt(
        cls,
        prompt: PromptTemplate,
        variables: Mapping[str, Any],
        *,
        images: Sequence[ImagePart] = (),
        schema: type[pydantic.BaseModel] | Mapping[str, Any] | None = None,
    ) -> GenerationRequest:
        return cls(
            tuple(prompt.render(variables, images)),
            OutputSchema.of(schema) if schema is not None else None,
            prompt,
        )


@dataclass(frozen=True)
class Generation:
    """What one request produced, with what it cost and where it came from."""

    text: str  # the last raw answer (reasoning and all), kept for inspection
    value: Any  # the validated answer (a pydantic model or JSON value), or the text without a schema
    error: str | None
    cached: bool  # every response came from the cache: this result cost nothing
    attempts: int  # answers read: 1 plus the repairs asked for
    input_tokens: int
    output_tokens: int
    cost_usd: float
    finish_reason: str | None
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def value_as_json(self) -> Any:
        """The answer as plain JSON data, for output records."""
        if isinstance(self.value, pydantic.BaseModel):
            return self.value.model_dump(mode="json")
        return self.value


@dataclass
class _Exchange:
    response: ChatResponse
    cached: bool
    cost_usd: float


class LanguageModel:
    """A model with its cache, rate limits, retries, budget and usage counters."""

    def __init__(
        self,
        config: ModelConfig,
        client: ProviderClient,
        *,
        cache: ResponseCache | None = None,
        prices: Prices | None = None,
        budget: Budget | None = None,
        meter: UsageMeter | None = None,
        backoff: Backoff | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.config = config
        self.client = client
        self.cache = cache
        self.prices = prices
        self.budget = budget or Budget(None)
        self.meter = meter or UsageMeter()
        self.limiter = RateLimiter(config.requests_per_minute, config.tokens_per_minute, sleep=sleep)
        self._backoff = backoff or Backoff(base=1.0, cap=60.0)
        self._sleep = sleep
        if self.budget.max_cost_usd is not None and prices is None:
            raise ConfigError(
                f"--max-cost needs the price of {config.provider} model {config.model!r}, which m4build does not know.",
                "Give --price-in and --price-out (US dollars per million tokens).",
            )

    @classmethod
    def open(
        cls,
        config: ModelConfig,
        *,
        cache: ResponseCache | None = None,
        max_cost_usd: float | None = None,
        budget: Budget | None = None,
        meter: UsageMeter | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> LanguageModel:
        """A model ready to call: key checked, client made, price found. Fails before any work.

        Several models of one run share one ``budget`` (``--max-cost`` is for the whole run);
        without one, ``max_cost_usd`` makes this model's own.
        """
        api_key = resolve_api_key(config, environ)
        return cls(
            config,
            make_client(config, api_key),
            cache=cache,
            prices=prices_for(config),
            budget=budget or Budget(max_cost_usd),
            meter=meter,
        )

    @property
    def name(self) -> str:
        return f"{self.config.provider}/{self.config.model}"

    def generate(self, request: GenerationRequest) -> Generation:
        """Answer one request; per-item failures come back as ``Generation.error``."""
        conversation = list(_with_schema_instruction(request, self.config))
        totals = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
        all_cached = True
        exchange: _Exchange | None = None
        problem = ""
        attempts = 0
        for attempts in range(1, self.config.repair_attempts + 2):
            try:
                exchange = self._exchange(conversation, request)
            except (BadRequest, TransientFailure) as failure:
                self.meter.add(self.name, failures=1)
                return self._result(request, exchange, totals, all_cached, attempts, error=failure.detail)
            all_cached &= exchange.cached
            if not exchange.cached:
                totals["input_tokens"] += exchange.response.input_tokens
                totals["output_tokens"] += exchange.response.output_tokens
                totals["cost_usd"] += exchange.cost_usd
            if request.schema is None:
                return self._result(request, exchange, totals, all_cached, attempts, value=exchange.response.text)
            try:
                value = request.schema.validate(exchange.response.text)
            except InvalidOutput as invalid:
                problem = str(invalid)
                if attempts <= self.config.repair_attempts:
                    self.meter.add(self.name, repairs=1)
                    conversation += [
                        Message.assistant(exchange.response.text),
                        repair_request(request.schema, problem),
                    ]
                continue
            return self._result(request, exchange, totals, all_cached, attempts, value=value)
        self.meter.add(self.name, failures=1)
        error = f"no valid answer after {attempts} attempt(s): {problem}"
        return self._result(request, exchange, totals, all_cached, attempts, error=error)

    def generate_many(self, requests: Iterable[GenerationRequest]) -> Iterator[tuple[int, Generation]]:
        """Answer many requests with ``config.concurrency`` in flight, yielding ``(index, result)``
        as each finishes.

        When the budget or a fatal provider error stops the run, no new request is sent, the
        ones in flight are finished and yielded, and then the error is raised, so the caller can
        keep every result that was paid for.
        """
        pending: dict[Future[Generation], int] = {}
        stop: BaseException | None = None
        source = iter(enumerate(requests))
        limit = self.config.concurrency
        with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="m4build-llm") as pool:
            try:
                while True:
                    while stop is None and len(pending) < 2 * limit:
                        item = next(source, None)
                        if item is None:
                            break
                        pending[pool.submit(self.generate, item[1])] = item[0]
                    if not pending:
                        break
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in sorted(done, key=pending.__getitem__):
                        index = pending.pop(future)
                        try:
                            yield index, future.result()
                        except M4BuildError as error:
                            stop = stop or error
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
        if stop is not None:
            raise stop

    def usage(self) -> dict[str, Any]:
        """Usage and estimated cost for the manifest; prices are stated so costs can be checked."""
        return {
            "models": self.meter.as_dict(),
            "prices_usd_per_million": (
                {"input": self.prices.input_per_million, "output": self.prices.output_per_million}
                if self.prices
                else None
            ),
            "max_cost_usd": self.budget.max_cost_usd,
        }

    def _exchange(self, conversation: Sequence[Message], request: GenerationRequest) -> _Exchange:
        chat = ChatRequest(
            messages=tuple(conversation),
            parameters=self.config.generation_parameters(),
            json_schema=request.schema.json_schema if request.schema else None,
            schema_name=request.schema.name if request.schema else "output",
        )
        key = self._cache_key(chat, request)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            self.meter.add(self.name, cache_hits=1)
            return _Exchange(cached, True, 0.0)
        estimate = estimate_input_tokens(conversation)
        worst_case = self.prices.cost(estimate, self.config.max_tokens) if self.prices else 0.0
        self.budget.reserve(worst_case)
        cost = 0.0
        try:
            response = self._call_with_retries(chat, estimate)
            cost = self.prices.cost(response.input_tokens, response.output_tokens) if self.prices else 0.0
        finally:
            self.budget.settle(worst_case, cost)
        self.limiter.settle(estimate + self.config.max_tokens, response.input_tokens + response.output_tokens)
        if self.cache is not None:
            self.cache.put(key, self.config.provider, self.config.model, response)
        self.meter.add(
            self.name,
            requests=1,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            cost_usd=cost,
        )
        return _Exchange(response, False, cost)

    def _call_with_retries(self, chat: ChatRequest, estimate: int) -> ChatResponse:
        for retry in range(self.config.max_retries + 1):
            self.limiter.acquire(estimate + self.config.max_tokens)
            try:
                return self.client.complete(chat)
            except TransientFailure as failure:
                if retry == self.config.max_retries:
                    raise TransientFailure(
                        f"{failure.detail} (gave up after {retry + 1} attempts)", status=failure.status
                    ) from None
                self.meter.add(self.name, retries=1)
                self._sleep(self._backoff.delay(retry + 1, failure.retry_after))
            except FatalFailure as failure:
                raise ModelError(
                    f"{self.config.provider} model {self.config.model!r} cannot be used: {failure.detail}.",
                    _fatal_hint(self.config, failure.status),
                ) from None
        raise AssertionError("unreachable: the loop returns or raises")

    def _cache_key(self, chat: ChatRequest, request: GenerationRequest) -> str:
        return request_key(
            {
                "provider": self.config.provider,
                "model": self.config.model,
                "messages": [message.key() for message in chat.messages],
                "parameters": chat.parameters,
                "schema": chat.json_schema,
                "prompt": request.prompt.provenance if request.prompt else None,
            }
        )

    def _result(
        self,
        request: GenerationRequest,
        exchange: _Exchange | None,
        totals: Mapping[str, float],
        cached: bool,
        attempts: int,
        *,
        value: Any = None,
        error: str | None = None,
    ) -> Generation:
        response = exchange.response if exchange else None
        provenance: dict[str, Any] = {
            "provider": self.config.provider,
            "model": self.config.model,
            "served_model": response.served_model if response else None,
        }
        if request.prompt is not None:
            provenance.update(request.prompt.provenance)
        return Generation(
            text=response.text if response else "",
            value=value,
            error=error,
            cached=cached and exchange is not None,
            attempts=attempts,
            input_tokens=int(totals["input_tokens"]),
            output_tokens=int(totals["output_tokens"]),
            cost_usd=float(totals["cost_usd"]),
            finish_reason=response.finish_reason if response else None,
            provenance=provenance,
        )


def make_client(config: ModelConfig, api_key: str | None) -> ProviderClient:
    """The SDK adapter for ``config.provider``; SDKs are imported only when used."""
    if config.provider == "gemini":
        from m4build.llm.providers.gemini import GeminiClient

        return GeminiClient(config, api_key)
    from m4build.llm.providers.openai_chat import OpenAIChatClient

    return OpenAIChatClient(config, api_key)


def _with_schema_instruction(request: GenerationRequest, config: ModelConfig) -> tuple[Message, ...]:
    """Messages as sent: when the server is not given the schema, the prompt carries it."""
    if request.schema is None or config.structured_output == "json_schema":
        return request.messages
    *head, last = request.messages
    return (*head, replace(last, text=last.text + schema_instruction(request.schema)))


def _fatal_hint(config: ModelConfig, status: int | None) -> str:
    if status in (401, 403):
        return "Check the API key in the environment and that it may use this model."
    if status == 404:
        where = f" at {config.base_url}" if config.base_url else ""
        return f"Check the model name and that the server{where} serves it (GET /v1/models lists them)."
    return "Check the provider settings."
