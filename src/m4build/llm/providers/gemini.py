"""Gemini through Google's google-genai SDK.

The SDK's ``base_url`` option points it at any host that speaks the Gemini REST protocol, which is
how the tests run the real client against a loopback server. Its own retries are left off (no
``retry_options``), so that m4build's retry rules, shared by all providers, apply.
"""

from __future__ import annotations

from typing import Any

from google import genai
from google.genai import errors, types

from m4build.backoff import retry_after_seconds
from m4build.llm.config import ModelConfig
from m4build.llm.messages import Message
from m4build.llm.providers.base import (
    BadRequest,
    ChatRequest,
    ChatResponse,
    TransientFailure,
    classify_status,
)


def _transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """Timeout and transport exception classes of the HTTP library google-genai runs on.

    Recent releases use httpx2, earlier ones httpx; both are caught, whichever is installed.
    """
    timeouts: list[type[Exception]] = []
    transports: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transports.append(module.TransportError)
    return tuple(timeouts), tuple(transports)


_TIMEOUTS, _TRANSPORT_ERRORS = _transport_errors()

# Finish reasons after which the text is not an answer to use.
_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}


class GeminiClient:
    """One Gemini model."""

    def __init__(self, config: ModelConfig, api_key: str | None):
        self.config = config
        http_options = types.HttpOptions(
            base_url=config.base_url, timeout=int(config.timeout_s * 1000)
        )
        if api_key is None:  # Vertex AI with application-default credentials
            self._client = genai.Client(vertexai=True, http_options=http_options)
        else:
            self._client = genai.Client(api_key=api_key, http_options=http_options)

    def complete(self, request: ChatRequest) -> ChatResponse:
        try:
            response = self._client.models.generate_content(
                model=self.config.model,
                contents=[_content(message) for message in request.messages if message.role != "system"],
                config=self._generation_config(request),
            )
        except errors.APIError as error:
            headers = getattr(getattr(error, "response", None), "headers", None) or {}
            detail = f"HTTP {error.code}: {error.message or error.status}"
            raise classify_status(error.code, detail, retry_after_seconds(headers.get("retry-after"))) from None
        except _TIMEOUTS:
            raise TransientFailure(f"no answer within {self.config.timeout_s:g} s") from None
        except _TRANSPORT_ERRORS as error:
            raise TransientFailure(f"connection failed: {error}") from None
        except ValueError as error:  # a body that is not JSON at all (truncated, an HTML error page)
            raise TransientFailure(f"the server's answer was not JSON: {error}") from None
        blocked = getattr(response.prompt_feedback, "block_reason", None) if response.prompt_feedback else None
        if blocked:
            raise BadRequest(f"the prompt was blocked ({_name(blocked)})")
        if not response.candidates:
            raise TransientFailure("the server answered with no candidates")
        finish = _name(response.candidates[0].finish_reason)
        if finish in _BLOCKED:
            raise BadRequest(f"the answer was blocked ({finish})")
        usage = response.usage_metadata
        return ChatResponse(
            text=_text(response),
            finish_reason=finish.lower() if finish else None,
            input_tokens=(usage.prompt_token_count or 0) if usage else 0,
            output_tokens=((usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)) if usage else 0,
            served_model=response.model_version or self.config.model,
        )

    def _generation_config(self, request: ChatRequest) -> types.GenerateContentConfig:
        parameters = request.parameters
        system = "\n\n".join(message.text for message in request.messages if message.role == "system")
        settings: dict[str, Any] = {
            "max_output_tokens": parameters["max_tokens"],
            "temperature": parameters.get("temperature"),
            "top_p": parameters.get("top_p"),
            "seed": parameters.get("seed"),
            "stop_sequences": list(parameters.get("stop") or []) or None,
            "system_instruction": system or None,
        }
        mode = parameters.get("structured_output")
        if request.json_schema is not None and mode in ("json_schema", "json_object"):
            settings["response_mime_type"] = "application/json"
            if mode == "json_schema":
                settings["response_json_schema"] = dict(request.json_schema)
        return types.GenerateContentConfig(**{k: v for k, v in settings.items() if v is not None})


def _content(message: Message) -> types.Content:
    parts = [types.Part.from_text(text=message.text)]
    parts += [types.Part.from_bytes(data=image.data, mime_type=image.mime_type) for image in message.images]
    return types.Content(role="model" if message.role == "assistant" else "user", parts=parts)


def _text(response: types.GenerateContentResponse) -> str:
    """The answer's text parts, without the thought summaries a thinking model may add."""
    content = response.candidates[0].content if response.candidates else None
    parts = (content.parts or []) if content else []
    return "".join(part.text for part in parts if part.text and not part.thought)


def _name(value: Any) -> str:
    return str(getattr(value, "name", value) or "")
