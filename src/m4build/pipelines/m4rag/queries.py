"""Query formation for M4-RAG: three query types, each in English and in the item's language.

The paper retrieves independently in English and in the item's language so that non-English
passages carry native terminology rather than translations. Identical query texts on the same wiki
(the same dish asked about in 30 languages, the same answer in many prompts) are searched once; the
dedup happens here, before any request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from m4build.errors import UsageError
from m4build.records import BenchmarkItem, Query

QUERY_TYPES = ("question", "answer", "culture")
QUERY_LANGUAGES = ("en", "native")
ENGLISH_WIKI = "enwiki"

_SPACES = re.compile(r"\s+")


def clean_query(text: str | None, max_chars: int) -> str:
    """Collapse whitespace and cut at a word boundary below ``max_chars`` (CirrusSearch's limit)."""
    if not text:
        return ""
    text = _SPACES.sub(" ", text).strip()
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    return cut[:space] if space > max_chars // 2 else cut


def _joined(*parts: str | None) -> str | None:
    present = [part.strip() for part in parts if part and part.strip()]
    return " ".join(present) if len(present) == len(parts) else None


def english_texts(item: BenchmarkItem) -> dict[str, str | None]:
    return {
        "question": item.question_en,
        "answer": item.answer_en,
        "culture": _joined(item.answer_en, item.domain_en),
    }


def native_texts(item: BenchmarkItem) -> dict[str, str | None]:
    return {
        "question": item.question,
        "answer": item.answer,
        "culture": _joined(item.answer, item.domain),
    }


def validate_choices(query_types: Sequence[str], query_languages: Sequence[str]) -> None:
    for name, given, valid in (
        ("query type", query_types, QUERY_TYPES),
        ("query language", query_languages, QUERY_LANGUAGES),
    ):
        unknown = [value for value in given if value not in valid]
        if unknown or not given:
            raise UsageError(
                f"unknown {name}: {', '.join(unknown) or '(none given)'}",
                f"Valid {name}s: {', '.join(valid)}.",
            )


class FormQueries:
    """Items in, queries out; English items get their English queries once."""

    name = "queries"

    def __init__(
        self,
        wiki_of: Mapping[str, str],
        query_types: Sequence[str] = QUERY_TYPES,
        query_languages: Sequence[str] = QUERY_LANGUAGES,
        max_chars: int = 300,
    ):
        validate_choices(query_types, query_languages)
        self.wiki_of = wiki_of  # benchmark language code -> wiki database name
        self.query_types = tuple(query_types)
        self.query_languages = tuple(query_languages)
        self.max_chars = max_chars
        self.stats: dict[str, int] = {"items": 0, "queries": 0, "empty": 0}

    def run(self, items: Iterable[BenchmarkItem]) -> Iterator[Query]:
        for item in items:
            self.stats["items"] += 1
            yield from self._queries_for(item)

    def _queries_for(self, item: BenchmarkItem) -> Iterator[Query]:
        native_wiki = self.wiki_of[item.lang]
        sides: list[tuple[str, str, dict[str, str | None]]] = []
        if "en" in self.query_languages:
            sides.append(("en", ENGLISH_WIKI, english_texts(item)))
        if "native" in self.query_languages and native_wiki != ENGLISH_WIKI:
            sides.append((item.lang, native_wiki, native_texts(item)))
        elif "native" in self.query_languages and "en" not in self.query_languages:
            sides.append(("en", ENGLISH_WIKI, native_texts(item)))
        for query_lang, wiki, texts in sides:
            for query_type in self.query_types:
                text = clean_query(texts[query_type], self.max_chars)
                if not text:
                    self.stats["empty"] += 1
                    continue
                self.stats["queries"] += 1
                yield Query(item.item_id, query_type, query_lang, wiki, text)


def former_for(languages: Iterable, recipe: Mapping[str, Any]) -> FormQueries:
    """The query former a recipe asks for, over the selected benchmark languages."""
    return FormQueries(
        wiki_of={language.code: language.dbname for language in languages},
        query_types=recipe["query_types"],
        query_languages=recipe["query_languages"],
        max_chars=int(recipe["max_query_chars"]),
    )


def unique_keys(keys: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The distinct (wiki, text) pairs to search, sorted so that work units are deterministic."""
    return sorted(set(keys))
