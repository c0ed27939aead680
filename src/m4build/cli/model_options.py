"""The model flags every model-using command shares, and the config they make.

Flags override the recipe's ``model:`` mapping one setting at a time, so a recipe can pin a
model and a user can still point it at their own vLLM server with ``--base-url``. There is no flag
for an API key on purpose: keys come from the environment only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from m4build.errors import UsageError
from m4build.llm.cache import ResponseCache, default_cache_path
from m4build.llm.config import PROVIDERS, ModelConfig

PROVIDER = typer.Option(None, "--provider", help=f"Model provider: {', '.join(PROVIDERS)}.")
MODEL = typer.Option(None, "--model", "-m", help="Model name, e.g. gpt-4o-mini or Qwen/Qwen2.5-VL-7B-Instruct.")
BASE_URL = typer.Option(None, "--base-url", help="Server URL for openai-compatible (e.g. http://localhost:8000/v1).")
TEMPERATURE = typer.Option(None, "--temperature", help="Sampling temperature (default 0).")
MAX_TOKENS = typer.Option(None, "--max-tokens", min=1, help="Longest answer, in tokens.")
CONCURRENCY = typer.Option(None, "--concurrency", min=1, help="Requests in flight at once (default 8).")
RPM = typer.Option(None, "--rpm", min=1, help="Requests-per-minute limit of your account.")
TPM = typer.Option(None, "--tpm", min=1, help="Tokens-per-minute limit of your account.")
MAX_RETRIES = typer.Option(None, "--max-retries", min=0, help="Retries of a failing request before it is recorded as failed (default 6).")
MAX_COST = typer.Option(None, "--max-cost", min=0.0, help="Stop before spending more than this many US dollars.")
PRICE_IN = typer.Option(None, "--price-in", min=0.0, help="US dollars per million input tokens (if not in the price table).")
PRICE_OUT = typer.Option(None, "--price-out", min=0.0, help="US dollars per million output tokens.")
LLM_CACHE = typer.Option(None, "--llm-cache", help="Response cache file (default $M4BUILD_LLM_CACHE or ~/.cache/m4build/llm.sqlite).")


def model_config(recipe_model: Mapping[str, Any] | None, **flags: Any) -> ModelConfig:
    """The recipe's model settings with every flag that was given laid over them."""
    settings = dict(recipe_model or {})
    renames = {"price_in": "price_input_per_million", "price_out": "price_output_per_million"}
    for name, value in flags.items():
        if value is not None:
            settings[renames.get(name, name)] = value
    for name in ("provider", "model"):
        if not settings.get(name):
            raise UsageError(
                f"No model {name} was given.",
                f"Pass --{name} (providers: {', '.join(PROVIDERS)}), or set `{name}:` in the recipe's model: mapping.",
            )
    return ModelConfig.from_mapping(settings)


def open_cache(path: Path | None) -> ResponseCache:
    return ResponseCache(path or default_cache_path())
