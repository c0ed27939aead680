"""What a provider adapter takes and returns, and the three ways a call can fail.

Adapters translate one ``ChatRequest`` into one SDK call and the SDK's answer (or exception) back;
they never retry, cache or wait, so those rules are written once, in ``m4build.llm.model``, for all
providers. A failure is *transient* (overload, 5xx, timeout: try again later), *bad request*
(this one request cannot succeed: record it and go on) or *fatal* (wrong key, unknown model:
nothing will succeed, stop the run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from m4build.llm.messages import Message


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make."""

    messages: Sequence[Message]
    parameters: Mapping[str, Any]
    json_schema: Mapping[str, Any] | None = None  # asked of the server when structured_output allows
    schema_name: str = "output"


@dataclass(frozen=True)
class ChatResponse:
    """What came back, as the cache stores it."""

    text: str
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    served_model: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ChatResponse:
        return cls(**{name: values.get(name) for name in cls.__dataclass_fields__})


class ProviderFailure(Exception):
    """A failed call, classified so the caller knows whether to retry, skip or stop."""

    def __init__(self, detail: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.retry_after = retry_after


class TransientFailure(ProviderFailure):
    """Overload, server error, timeout or dropped connection: worth retrying."""


class BadRequest(ProviderFailure):
    """This request cannot succeed as made (too long, refused, malformed): record it and go on."""


class FatalFailure(ProviderFailure):
    """No request will succeed (bad key, unknown model, no permission): stop the run."""


class ProviderClient(Protocol):
    """One SDK client for one model."""

    def complete(self, request: ChatRequest) -> ChatResponse: ...


def classify_status(status: int | None, detail: str, retry_after: float | None = None) -> ProviderFailure:
    """The failure class for an HTTP status, the same for every provider."""
    if status in (401, 403, 404):
        return FatalFailure(detail, status=status)
    if status is None or status in (408, 409, 425, 429) or status >= 500:
        return TransientFailure(detail, status=status, retry_after=retry_after)
    return BadRequest(detail, status=status)
