"""Prompts as versioned Jinja templates, so a changed prompt is a new experiment.

A prompt is part of a benchmark's definition: a translated instruction, a judge rubric or a QA
generation prompt decides what the data say. Each lives in
``builders/prompts/<benchmark>/<name>.jinja``, opens with a Jinja comment holding YAML front
matter (``version``, ``source``, ``description``, ``variables`` and the ``optional`` ones among
them, which default to none) and defines a ``system`` and a
``user`` block (a template without blocks is one user message). The version and a hash of the file
go into every cache key and every output record, so an edited prompt never reuses an old answer
and every record says which prompt made it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from m4build.errors import ConfigError, UsageError
from m4build.llm.messages import ImagePart, Message
from m4build.resources import data_path

_FRONT_MATTER_START = "{#-"
_FRONT_MATTER_END = "-#}"
_ROLES = ("system", "user")


@dataclass(frozen=True)
class PromptTemplate:
    """One prompt file: its identity, its provenance and its compiled blocks."""

    name: str  # "m4rag/translate": the path under builders/prompts without ".jinja"
    version: str
    source: str
    description: str
    variables: tuple[str, ...]
    optional: tuple[str, ...]  # variables that may be left out; they render as none
    sha256: str  # of the whole file, so an edit without a version bump still changes the key
    text: str

    @property
    def provenance(self) -> dict[str, str]:
        """What every record made with this prompt stores about it."""
        return {"prompt": self.name, "prompt_version": self.version, "prompt_sha256": self.sha256[:16]}

    def render(self, variables: Mapping[str, Any], images: Sequence[ImagePart] = ()) -> list[Message]:
        """The chat messages for ``variables``; ``images`` are attached to the user message."""
        missing = [name for name in self.variables if name not in variables and name not in self.optional]
        if missing:
            raise UsageError(
                f"Prompt {self.name} (version {self.version}) needs {', '.join(missing)}, "
                f"which {'was' if len(missing) == 1 else 'were'} not given.",
                f"Pass every variable the prompt declares: {', '.join(self.variables)}.",
            )
        template = _compile(self.name, self.text)
        values = {**dict.fromkeys(self.optional), **variables}
        context = template.new_context(values)
        rendered = {
            role: "".join(template.blocks[role](context)).strip()
            for role in _ROLES
            if role in template.blocks
        }
        if not rendered:
            rendered = {"user": template.render(values).strip()}
        messages = [Message.system(rendered["system"])] if rendered.get("system") else []
        messages.append(Message.user(rendered.get("user", ""), images=images))
        return messages


def load_prompt(name: str, *, root: Path | None = None) -> PromptTemplate:
    """The prompt ``name`` (e.g. ``"m4rag/translate"``) from ``builders/prompts`` or ``root``."""
    folder = root if root is not None else data_path("builders", "prompts")
    path = folder / f"{name}.jinja"
    if not path.is_file():
        known = sorted(str(p.relative_to(folder).with_suffix("")) for p in folder.rglob("*.jinja"))
        raise UsageError(
            f"No prompt named {name!r} in {folder}.",
            f"Known prompts: {', '.join(known) or 'none'}.",
        )
    return parse_prompt(name, path.read_text(encoding="utf-8"), origin=str(path))


def parse_prompt(name: str, text: str, *, origin: str = "<string>") -> PromptTemplate:
    """Read the front matter and check the template compiles, naming the file on any mistake."""
    header = _front_matter(text, origin)
    try:
        _compile(name, text)
    except jinja2.TemplateSyntaxError as error:
        raise ConfigError(f"{origin}, line {error.lineno}: {error.message}", "Fix the template syntax.")
    version = header.get("version")
    if version is None or not str(version).strip():
        raise ConfigError(f"{origin} has no `version:` in its front matter.", _FRONT_MATTER_HELP)
    return PromptTemplate(
        name=name,
        version=str(version),
        source=str(header.get("source", "")).strip(),
        description=str(header.get("description", "")).strip(),
        variables=tuple(header.get("variables") or ()),
        optional=_optional(header, origin),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        text=text,
    )


_FRONT_MATTER_HELP = (
    "Start the file with a Jinja comment holding YAML, e.g.\n"
    "{#-\nversion: 1\nsource: where the wording comes from\nvariables: [question]\n-#}"
)


def _optional(header: dict[str, Any], origin: str) -> tuple[str, ...]:
    optional = tuple(header.get("optional") or ())
    undeclared = sorted(set(optional) - set(header.get("variables") or ()))
    if undeclared:
        raise ConfigError(
            f"{origin}: optional {', '.join(undeclared)} not listed under `variables:`.",
            "List every variable under `variables:`, and the optional ones again under `optional:`.",
        )
    return optional


def _front_matter(text: str, origin: str) -> dict[str, Any]:
    stripped = text.lstrip()
    if not stripped.startswith(_FRONT_MATTER_START) or _FRONT_MATTER_END not in stripped:
        raise ConfigError(f"{origin} does not start with a front-matter comment.", _FRONT_MATTER_HELP)
    body = stripped[len(_FRONT_MATTER_START) : stripped.index(_FRONT_MATTER_END)]
    try:
        header = yaml.safe_load(body) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"{origin}: the front matter is not valid YAML ({error}).", _FRONT_MATTER_HELP)
    if not isinstance(header, dict):
        raise ConfigError(f"{origin}: the front matter must be a YAML mapping.", _FRONT_MATTER_HELP)
    return header


@cache
def _compile(name: str, text: str) -> jinja2.Template:
    environment = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False
    )
    return environment.from_string(text)
