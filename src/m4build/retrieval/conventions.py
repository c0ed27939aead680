"""How each embedding-model family expects to be called: prefixes and normalisation.

Asymmetric retrieval models are trained with a marker telling queries from passages; calling one
without its marker (or with another family's) silently costs several points of recall, and the
peer release recorded none. So the convention is looked up once, applied on both sides, and
written into the index manifest, where the searcher reads it back.

Precedence (first that says something wins): the recipe's explicit values, the model's own
sentence-transformers ``prompts`` (``query`` / ``passage`` / ``document``), the family table below,
and for an unknown model no prefixes with normalisation (cosine similarity is the safe default
for sentence-transformers models), recorded with ``family: unknown`` so it is visible.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any

from m4build.errors import UsageError

E5_INSTRUCT_TASK = "Given a web search query, retrieve relevant passages that answer the query"


@dataclass(frozen=True)
class Conventions:
    """What is prepended to queries and passages, and whether vectors are L2-normalised."""

    family: str
    query_prefix: str
    passage_prefix: str
    normalize: bool
    source: str  # where the values came from: table, model, recipe or default

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# Family -> (query prefix, passage prefix, normalise), from each model card.
FAMILIES: dict[str, tuple[str, str, bool]] = {
    # intfloat/e5-* and multilingual-e5-*: "query: " / "passage: ", cosine similarity.
    "e5": ("query: ", "passage: ", True),
    # multilingual-e5-*-instruct: a one-line task instruction for queries, nothing for passages.
    "e5-instruct": (f"Instruct: {E5_INSTRUCT_TASK}\nQuery: ", "", True),
    # BAAI/bge-m3: no instruction on either side for dense retrieval.
    "bge-m3": ("", "", True),
    # BAAI/bge-*-en(-v1.5): an instruction for short queries, none for passages.
    "bge-en": ("Represent this sentence for searching relevant passages: ", "", True),
    # all-MiniLM, all-mpnet, paraphrase-multilingual-*, LaBSE: symmetric, cosine.
    "sentence-transformers": ("", "", True),
    # thenlper/gte-* and Alibaba-NLP/gte-multilingual-base: no prefixes.
    "gte": ("", "", True),
    # nomic-ai/nomic-embed-text-*: task prefixes on both sides.
    "nomic": ("search_query: ", "search_document: ", True),
    "unknown": ("", "", True),
}

# Patterns over the model's name (its last two path components, lower-cased), tried in order:
# the instruct variant must be tried before plain E5.
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"e5[-_].*instruct", "e5-instruct"),
    (r"(^|[-_/])e5([-_/]|$)", "e5"),
    (r"bge[-_]m3", "bge-m3"),
    (r"bge[-_].*[-_]en", "bge-en"),
    (r"(all|paraphrase)[-_]|labse|minilm|mpnet", "sentence-transformers"),
    (r"(^|[-_/])gte[-_]", "gte"),
    (r"nomic[-_]embed", "nomic"),
)


def family_of(model: str) -> str:
    """The family whose conventions a model id or local path follows; ``unknown`` when none matches."""
    name = "/".join(PurePath(model).parts[-2:]).lower()
    for pattern, family in _PATTERNS:
        if re.search(pattern, name):
            return family
    return "unknown"


def _model_prompts(prompts: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The non-empty query and passage prompts a sentence-transformers model declares itself.

    sentence-transformers gives every model empty ``query``/``document`` prompts by default; those
    say nothing, so only non-empty ones count.
    """
    passage = prompts.get("passage") or prompts.get("document") or None
    return prompts.get("query") or None, passage


def conventions_for(
    model: str,
    overrides: Mapping[str, Any] | None = None,
    model_prompts: Mapping[str, str] | None = None,
) -> Conventions:
    """The conventions to use for ``model``; see the module docstring for the precedence.

    ``overrides`` holds the recipe's ``family``, ``query_prefix``, ``passage_prefix`` and
    ``normalize`` (None = not set); ``model_prompts`` is the model's ``prompts`` dictionary.
    """
    overrides = overrides or {}
    family = overrides.get("family") or family_of(model)
    if family not in FAMILIES:
        raise UsageError(f"unknown model family {family!r}", f"Valid families: {', '.join(FAMILIES)}.")
    query, passage, normalize = FAMILIES[family]
    source = "default" if family == "unknown" else "table"
    declared_query, declared_passage = _model_prompts(model_prompts or {})
    if declared_query is not None or declared_passage is not None:
        query, passage, source = declared_query or "", declared_passage or "", "model"
    explicit = {key: overrides.get(key) for key in ("query_prefix", "passage_prefix", "normalize")}
    if any(value is not None for value in explicit.values()):
        source = "recipe"
    return Conventions(
        family=family,
        query_prefix=explicit["query_prefix"] if explicit["query_prefix"] is not None else query,
        passage_prefix=explicit["passage_prefix"] if explicit["passage_prefix"] is not None else passage,
        normalize=bool(explicit["normalize"]) if explicit["normalize"] is not None else normalize,
        source=source,
    )
