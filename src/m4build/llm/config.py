"""Which model to call and how: everything but the API key, which only the environment holds.

A ``ModelConfig`` comes from a recipe's ``model:`` mapping or from command-line flags, and is
written into manifests as it is, so it must never hold a secret: keys are read from the
environment (or the provider's own standard configuration) at the moment a client is made, and a
missing key stops the run before any work starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from m4build.errors import ConfigError, UsageError

Provider = Literal["openai", "gemini", "openai-compatible"]
PROVIDERS: tuple[str, ...] = ("openai", "gemini", "openai-compatible")
StructuredMode = Literal["json_schema", "json_object", "prompt"]

# Where each provider's SDK looks for its key, in the order it looks.
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openai-compatible": (),
}
# With this set, google-genai authenticates through Vertex AI application-default credentials.
VERTEX_VARIABLE = "GOOGLE_GENAI_USE_VERTEXAI"
# Local servers (vLLM, llama.cpp, Ollama) accept any key; the SDK still wants a non-empty one.
LOCAL_SERVER_KEY = "not-needed"


@dataclass(frozen=True)
class ModelConfig:
    """A model, its provider and its generation and politeness settings."""

    provider: Provider
    model: str
    base_url: str | None = None
    api_key_env: str | None = None  # the environment variable to read the key from, if not the default
    temperature: float | None = 0.0
    max_tokens: int = 1024
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    extra_body: Mapping[str, Any] = field(default_factory=dict)  # e.g. vLLM's chat_template_kwargs
    structured_output: StructuredMode = "json_schema"
    repair_attempts: int = 2
    timeout_s: float = 120.0
    max_retries: int = 6
    concurrency: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    price_input_per_million: float | None = None  # USD; None looks the model up in llm_prices.yaml
    price_output_per_million: float | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise UsageError(
                f"Unknown model provider {self.provider!r}.", f"Choose one of: {', '.join(PROVIDERS)}."
            )
        if not self.model.strip():
            raise UsageError("No model was given.", "Pass --model NAME or set `model:` in the recipe.")
        if self.provider == "openai-compatible" and not self.base_url:
            raise UsageError(
                f"Provider openai-compatible needs the server's address for model {self.model!r}.",
                "Pass --base-url, e.g. http://localhost:8000/v1 for a vLLM server.",
            )
        for name in ("concurrency", "max_tokens"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name} must be at least 1, got {getattr(self, name)}.")
        if self.repair_attempts < 0 or self.max_retries < 0:
            raise UsageError("repair_attempts and max_retries cannot be negative.")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ModelConfig:
        """Build from a recipe's ``model:`` mapping, refusing keys we do not know (typos)."""
        if "api_key" in values:
            raise ConfigError("API keys are never read from recipes.", "Set it in the environment.")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"Unknown model setting(s): {', '.join(unknown)}.",
                f"Known settings: {', '.join(sorted(known))}.",
            )
        values = dict(values)
        if "stop" in values:
            values["stop"] = tuple(values["stop"] or ())
        return cls(**values)

    def generation_parameters(self) -> dict[str, Any]:
        """The settings that change what the model answers, hence part of every cache key."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "seed": self.seed,
            "stop": list(self.stop),
            "extra_body": dict(self.extra_body),
            "structured_output": self.structured_output,
        }

    def describe(self) -> dict[str, Any]:
        """The config as manifests record it (it never holds a key)."""
        described = asdict(self)
        described["stop"] = list(self.stop)
        described["extra_body"] = dict(self.extra_body)
        return described


def resolve_api_key(config: ModelConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """The API key for ``config``, or ``None`` where the provider authenticates another way.

    Raises ``ConfigError`` when a key is needed and missing, naming the variable to set, so the
    run stops before any item is processed.
    """
    env = os.environ if environ is None else environ
    if config.api_key_env:
        key = env.get(config.api_key_env, "").strip()
        if not key:
            raise ConfigError(
                f"{config.provider} model {config.model!r}: the API key variable "
                f"{config.api_key_env} is not set.",
                f"Run `export {config.api_key_env}=...` (never put keys in recipes or flags).",
            )
        return key
    if config.provider == "openai-compatible":
        return env.get("OPENAI_API_KEY", "").strip() or LOCAL_SERVER_KEY
    if config.provider == "gemini" and env.get(VERTEX_VARIABLE, "").lower() in ("1", "true"):
        return None
    for name in KEY_VARIABLES[config.provider]:
        key = env.get(name, "").strip()
        if key:
            return key
    variables = " or ".join(KEY_VARIABLES[config.provider])
    extra = f", or set {VERTEX_VARIABLE}=true to use Vertex AI credentials" if config.provider == "gemini" else ""
    raise ConfigError(
        f"{config.provider} model {config.model!r} needs an API key and {variables} is not set.",
        f"Run `export {KEY_VARIABLES[config.provider][0]}=...`{extra}.",
    )
