"""Typed records that flow between the rooms of m4build (sources -> text -> pipelines).

Kept in one place so that every step speaks the same vocabulary. All are plain frozen dataclasses:
cheap to build, hashable where that matters, and trivially turned into Arrow rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LEAD_HEADING = "Lead"
"""Heading given to the text before the first heading of an article, in every language."""

INFOBOX_HEADING = "Infobox"
"""Heading given to the key-value section built from an article's infobox."""


@dataclass(frozen=True)
class PageRef:
    """One revision of one page on one wiki: the unit of content fetching and of dedup."""

    wiki: str  # database name, e.g. "enwiki", "zh_yuewiki"
    page_id: int
    revision_id: int
    title: str


@dataclass(frozen=True)
class PageHit:
    """One search result, as ``generator=search`` with ``prop=info|pageprops|langlinks`` returns it."""

    wiki: str
    page_id: int
    revision_id: int
    title: str
    rank: int  # 1-based position in the result list
    wikidata_id: str | None = None
    langlinks: tuple[tuple[str, str], ...] = ()  # (language code, title) pairs, sorted

    @property
    def ref(self) -> PageRef:
        return PageRef(self.wiki, self.page_id, self.revision_id, self.title)


@dataclass(frozen=True)
class Article:
    """The HTML of one page revision, with where and when it came from."""

    wiki: str
    page_id: int
    revision_id: int
    title: str
    url: str
    html: str
    wikidata_id: str | None = None
    retrieved_at: str = ""  # ISO 8601, UTC
    source: str = ""  # "api", "snapshot" or "sample"

    @property
    def ref(self) -> PageRef:
        return PageRef(self.wiki, self.page_id, self.revision_id, self.title)


@dataclass(frozen=True)
class FetchFailure:
    """A page whose content could not be had, kept so that nothing is dropped silently."""

    wiki: str
    page_id: int
    revision_id: int
    title: str
    reason: str  # short machine-readable kind, e.g. "missing", "http-503", "malformed-json"
    detail: str = ""
    attempts: int = 1

    @property
    def ref(self) -> PageRef:
        return PageRef(self.wiki, self.page_id, self.revision_id, self.title)


@dataclass(frozen=True)
class Section:
    """One section of an article, as the section parser returns it.

    ``path`` holds the headings from the top level down to this section (the lead's path is
    ``(LEAD_HEADING,)``, the infobox's ``(INFOBOX_HEADING,)``), so that "History > Origins" keeps its
    context after sections are flattened.
    """

    index: int  # 0 for the lead, then in document order
    heading: str
    level: int  # 1 for the lead and the infobox, 2..6 for h2..h6
    path: tuple[str, ...]
    text: str
    kind: str = "section"  # "lead", "section" or "infobox"


@dataclass(frozen=True)
class MultipleChoice:
    """What a multiple-choice evaluation needs of an item beyond what query formation uses."""

    options: tuple[str, ...]  # in the item's language, in the benchmark's order
    answer_index: int  # 0-based position of the right option
    options_en: tuple[str, ...] = ()  # the English options, where the benchmark gives them
    image_url: str | None = None
    image: bytes | None = field(default=None, repr=False)  # the encoded image, where the rows embed it
    oracle_context: str | None = None  # English text that answers the question (WorldCuisines: food-kb)

    @property
    def answer_option(self) -> int:
        """The 1-based option number, as prompts print it."""
        return self.answer_index + 1


@dataclass(frozen=True)
class BenchmarkItem:
    """One VQA item of a benchmark: what query formation needs, and the choice part for evaluation."""

    benchmark: str  # "worldcuisines" or "cvqa"
    item_id: str
    lang: str  # benchmark language code, e.g. "ja_formal", "es_mx"
    question: str  # in the item's language
    answer: str  # in the item's language where the benchmark gives it, else as given
    question_en: str | None = None
    answer_en: str | None = None
    domain_en: str | None = None  # culture term, e.g. "Japanese cuisine"
    domain: str | None = None  # the same term in the item's language
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    choice: MultipleChoice | None = field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Query:
    """One search query formed from an item: what is searched, where, and why."""

    item_id: str
    query_type: str  # "question", "answer" or "culture"
    query_lang: str  # "en" or the item's language code
    wiki: str  # database name of the wiki searched
    text: str

    @property
    def key(self) -> tuple[str, str]:
        """Queries with the same key are searched once."""
        return (self.wiki, self.text)
