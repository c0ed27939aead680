"""OpenAI and every server that speaks its chat-completions protocol, through the openai SDK.

vLLM, llama.cpp's server, Ollama, SGLang and OpenAI itself accept the same request, so one adapter
serves the ``openai`` and ``openai-compatible`` providers; they differ only in the base URL, in
how the key is found, and in the name of the output-length parameter (OpenAI's newer models
accept only ``max_completion_tokens``; most local servers know only ``max_tokens``).
"""

from __future__ import annotations

from typing import Any

import openai

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


class OpenAIChatClient:
    """One model behind the chat-completions endpoint."""

    def __init__(self, config: ModelConfig, api_key: str | None):
        self.config = config
        self._client = openai.OpenAI(
            api_key=api_key,
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,  # m4build.llm.model retries, honouring Retry-After, for every provider alike
        )
        self._length_parameter = "max_completion_tokens" if config.provider == "openai" else "max_tokens"

    def complete(self, request: ChatRequest) -> ChatResponse:
        try:
            completion = self._client.chat.completions.create(**self._arguments(request))
        except openai.APIStatusError as error:
            raise classify_status(error.status_code, _detail(error), _retry_after(error.response)) from None
        except openai.APITimeoutError:
            raise TransientFailure(f"no answer within {self.config.timeout_s:g} s") from None
        except openai.APIConnectionError as error:
            raise TransientFailure(f"connection failed: {error.__cause__ or error}") from None
        except openai.APIResponseValidationError as error:
            raise TransientFailure(f"the server's answer was malformed: {error.message}") from None
        except ValueError as error:  # a body that is not JSON at all (truncated, an HTML error page)
            raise TransientFailure(f"the server's answer was not JSON: {error}") from None
        if not completion.choices:
            raise TransientFailure("the server answered with no choices")
        choice = completion.choices[0]
        refusal = getattr(choice.message, "refusal", None)
        if refusal:
            raise BadRequest(f"the model refused: {refusal}")
        usage = completion.usage
        return ChatResponse(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            served_model=completion.model,
        )

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        parameters = dict(request.parameters)
        arguments: dict[str, Any] = {
            "model": self.config.model,
            "messages": [_message(message) for message in request.messages],
            self._length_parameter: parameters["max_tokens"],
        }
        for name in ("temperature", "top_p", "seed"):
            if parameters.get(name) is not None:
                arguments[name] = parameters[name]
        if parameters.get("stop"):
            arguments["stop"] = list(parameters["stop"])
        if parameters.get("extra_body"):
            arguments["extra_body"] = dict(parameters["extra_body"])
        mode = parameters.get("structured_output")
        if request.json_schema is not None and mode == "json_schema":
            arguments["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": dict(request.json_schema), "strict": False},
            }
        elif request.json_schema is not None and mode == "json_object":
            arguments["response_format"] = {"type": "json_object"}
        return arguments


def _message(message: Message) -> dict[str, Any]:
    if not message.images:
        return {"role": message.role, "content": message.text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}]
    parts += [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in message.images]
    return {"role": message.role, "content": parts}


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None) or {}
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return float(milliseconds) / 1000
        except ValueError:
            pass
    return retry_after_seconds(headers.get("retry-after"))


def _detail(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if message:
            return f"HTTP {error.status_code}: {message}"
    return f"HTTP {error.status_code}: {error.message}"
