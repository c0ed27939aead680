"""Token usage, what it cost, and a budget that stops a run before it overspends.

Estimated cost is tokens times the provider's price. The budget is checked *before* each call
against a worst case (the estimated prompt plus the full ``max_tokens`` answer), with in-flight
calls' worst cases reserved, so concurrent threads cannot jointly overshoot: a run stops when the
next call *could* cross the limit, having spent at most the limit. Cache hits cost nothing and are
never refused.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from m4build.errors import ConfigError, ExitCode, M4BuildError
from m4build.llm.config import ModelConfig
from m4build.llm.messages import Message
from m4build.resources import data_path

CHARS_PER_TOKEN = 4  # a deliberately generous estimate for Latin text; usage corrects it afterwards
TOKENS_PER_IMAGE = 1_000  # a high-detail tile budget; real usage corrects it afterwards
TOKENS_PER_MESSAGE = 4


class BudgetExceeded(M4BuildError):
    """The next call could cross ``--max-cost``; everything finished so far is kept."""

    exit_code = ExitCode.FAILURE


@dataclass(frozen=True)
class Prices:
    """US dollars per million input and output tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1e6


def prices_for(config: ModelConfig, table: Mapping[str, Any] | None = None) -> Prices | None:
    """The prices of ``config``'s model: its own settings, else the packaged table, else ``None``."""
    given = (config.price_input_per_million, config.price_output_per_million)
    if all(price is not None for price in given):
        return Prices(float(given[0]), float(given[1]))
    if any(price is not None for price in given):
        raise ConfigError(
            f"Model {config.model!r} has only one of its two prices set.",
            "Give both --price-in and --price-out (US dollars per million tokens).",
        )
    if config.provider == "openai-compatible":
        return Prices(0.0, 0.0)
    table = load_price_table() if table is None else table
    entries = table.get(config.provider) or {}
    matches = [name for name in entries if config.model == name or config.model.startswith(f"{name}-")]
    if not matches:
        return None
    entry = entries[max(matches, key=len)]
    return Prices(float(entry["input"]), float(entry["output"]))


def load_price_table() -> dict[str, Any]:
    with data_path("builders", "llm_prices.yaml").open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def estimate_input_tokens(messages: Sequence[Message]) -> int:
    """A pessimistic prompt size, for rate limits and the budget before the real count is known."""
    total = 0
    for message in messages:
        total += TOKENS_PER_MESSAGE + -(-len(message.text) // CHARS_PER_TOKEN)
        total += TOKENS_PER_IMAGE * len(message.images)
    return total


@dataclass
class Usage:
    """Counters for one model within one run."""

    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    repairs: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "cost_usd": round(self.cost_usd, 6)}


class UsageMeter:
    """Thread-safe usage per ``provider/model``, written into run manifests."""

    def __init__(self) -> None:
        self._usage: dict[str, Usage] = {}
        self._lock = threading.Lock()

    def add(self, model: str, **counts: float) -> None:
        with self._lock:
            usage = self._usage.setdefault(model, Usage())
            for name, amount in counts.items():
                setattr(usage, name, getattr(usage, name) + amount)

    @property
    def total_cost_usd(self) -> float:
        with self._lock:
            return sum(usage.cost_usd for usage in self._usage.values())

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {model: usage.as_dict() for model, usage in sorted(self._usage.items())}


class Budget:
    """A spending limit in US dollars, shared by all threads of a run."""

    def __init__(self, max_cost_usd: float | None, spent_usd: float = 0.0):
        if max_cost_usd is not None and max_cost_usd < 0:
            raise ConfigError(f"--max-cost must not be negative, got {max_cost_usd}.")
        self.max_cost_usd = max_cost_usd
        self.spent_usd = spent_usd
        self._reserved = 0.0
        self._lock = threading.Lock()

    def reserve(self, worst_case_usd: float) -> None:
        """Set aside ``worst_case_usd`` for a call, or raise ``BudgetExceeded`` if it might not fit."""
        with self._lock:
            if self.max_cost_usd is None:
                return
            committed = self.spent_usd + self._reserved
            if committed + worst_case_usd > self.max_cost_usd:
                raise BudgetExceeded(
                    f"Stopped before exceeding --max-cost ${self.max_cost_usd:.4f}: "
                    f"${self.spent_usd:.4f} spent, and the next call could cost up to ${worst_case_usd:.4f}.",
                    "Everything finished so far is kept and cached; rerun with a higher --max-cost to go on.",
                )
            self._reserved += worst_case_usd

    def settle(self, reserved_usd: float, actual_usd: float) -> None:
        with self._lock:
            if self.max_cost_usd is not None:
                self._reserved -= reserved_usd
            self.spent_usd += actual_usd
