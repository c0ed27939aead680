"""Structured output: ask for JSON that matches a schema, check it, and ask again when it does not.

Servers differ in how well they enforce a schema (OpenAI's strict mode, vLLM's guided decoding,
llama.cpp's grammars, none at all), and reasoning models wrap the JSON in thinking and Markdown,
so every answer is validated here whatever the server promised. An invalid answer is sent back
with the validation error for a bounded number of repairs; after that the item is recorded as
failed and the run goes on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import pydantic

from m4build.errors import UsageError
from m4build.llm.messages import Message
from m4build.text.reasoning import final_answer

_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class OutputSchema:
    """A pydantic model or a JSON schema that every answer must satisfy."""

    name: str
    json_schema: Mapping[str, Any]
    model: type[pydantic.BaseModel] | None = None

    @classmethod
    def of(cls, schema: type[pydantic.BaseModel] | Mapping[str, Any]) -> OutputSchema:
        if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
            return cls(schema.__name__, schema.model_json_schema(), schema)
        if isinstance(schema, Mapping):
            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError as error:
                raise UsageError(f"The output schema is not a valid JSON schema: {error.message}.")
            return cls(str(schema.get("title") or "output"), dict(schema))
        raise UsageError(f"An output schema must be a pydantic model or a JSON schema, not {type(schema).__name__}.")

    def validate(self, text: str) -> Any:
        """The parsed answer, or ``InvalidOutput`` saying exactly what is wrong with it."""
        value = read_json(text)
        if self.model is not None:
            try:
                return self.model.model_validate(value)
            except pydantic.ValidationError as error:
                problems = "; ".join(
                    f"{'.'.join(str(part) for part in issue['loc']) or 'answer'}: {issue['msg']}"
                    for issue in error.errors()
                )
                raise InvalidOutput(problems) from None
        errors = sorted(
            jsonschema.validators.validator_for(self.json_schema)(self.json_schema).iter_errors(value),
            key=lambda error: list(error.path),
        )
        if errors:
            raise InvalidOutput(
                "; ".join(f"{'.'.join(map(str, e.path)) or 'answer'}: {e.message}" for e in errors[:5])
            )
        return value


class InvalidOutput(ValueError):
    """A model answer that is not JSON or does not match the schema."""


def read_json(text: str) -> Any:
    """The JSON value a model answered with, found past reasoning, code fences and chatter.

    Tries the whole final answer first, then the first ``{`` or ``[`` that starts a complete JSON
    value, so "Sure! {"answer": 2}" parses but a truncated object does not.
    """
    answer = final_answer(text)
    if not answer:
        raise InvalidOutput("the answer is empty (or holds only reasoning)")
    try:
        return json.loads(answer)
    except json.JSONDecodeError:
        pass
    for start, char in enumerate(answer):
        if char in "{[":
            try:
                value, _ = _DECODER.raw_decode(answer, start)
                return value
            except json.JSONDecodeError:
                continue
    raise InvalidOutput(f"no JSON value found in the answer {_excerpt(answer)}")


def repair_request(schema: OutputSchema, problem: str) -> Message:
    """The user turn that sends an invalid answer's problem back to the model."""
    return Message.user(
        f"Your previous answer could not be used: {problem}.\n"
        "Reply again with only a JSON value that matches this JSON schema, and nothing else:\n"
        f"{json.dumps(schema.json_schema, ensure_ascii=False)}"
    )


def schema_instruction(schema: OutputSchema) -> str:
    """Appended to the prompt when the server cannot be asked for the schema directly."""
    return (
        "\n\nAnswer with only a JSON value that matches this JSON schema:\n"
        f"{json.dumps(schema.json_schema, ensure_ascii=False)}"
    )


def _excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")
