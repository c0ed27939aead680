"""The fetch step: each unique page revision fetched once and parsed into sections at once.

Dedup happens before any content request: search hits are reduced to one revision per
(wiki, page id) — the newest seen — so an article retrieved by fifty queries in three languages
costs one request. Units store parsed sections, not HTML, which keeps the run folder small.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from m4build.pipelines.m4rag.units import plan_units, run_units
from m4build.records import Article, FetchFailure, PageRef
from m4build.runs import RunFolder
from m4build.sources.wikipedia import SourceStats, WikipediaSource
from m4build.text.sections import parse_sections

STEP = "fetch"

FETCH_SCHEMA = pa.schema(
    [
        ("wiki", pa.string()),
        ("page_id", pa.int64()),
        ("revision_id", pa.int64()),
        ("title", pa.string()),
        ("url", pa.string()),
        ("wikidata_id", pa.string()),
        ("retrieved_at", pa.string()),
        ("source", pa.string()),
        ("status", pa.string()),  # "ok", "empty" (no text after cleaning) or "failed"
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("section_index", pa.int32()),
        ("section_heading", pa.string()),
        ("section_level", pa.int8()),
        ("section_path", pa.list_(pa.string())),
        ("section_kind", pa.string()),
        ("text", pa.string()),
    ]
)

_SECTION_FIELDS = ("section_index", "section_heading", "section_level", "section_path", "section_kind", "text")


def pages_to_fetch(search: pa.Table) -> list[PageRef]:
    """One reference per (wiki, page id): the newest revision any search reported."""
    ok = search.filter(pc.and_(pc.equal(search["status"], "ok"), pc.is_valid(search["page_id"])))
    newest: dict[tuple[str, int], PageRef] = {}
    for wiki, page_id, revision_id, title in zip(
        ok["wiki"].to_pylist(), ok["page_id"].to_pylist(), ok["revision_id"].to_pylist(), ok["title"].to_pylist()
    ):
        current = newest.get((wiki, page_id))
        if current is None or revision_id > current.revision_id:
            newest[(wiki, page_id)] = PageRef(wiki, page_id, revision_id, title)
    return [newest[key] for key in sorted(newest)]


def settled_pages(table: pa.Table | None) -> set[tuple[str, int, int]]:
    """Revisions already fetched (with or without text); failures are fetched again."""
    if table is None or table.num_rows == 0:
        return set()
    done = table.filter(pc.not_equal(table["status"], "failed"))
    return set(zip(done["wiki"].to_pylist(), done["page_id"].to_pylist(), done["revision_id"].to_pylist()))


def _article_fields(article: Article | FetchFailure) -> dict:
    return {
        "wiki": article.wiki,
        "page_id": article.page_id,
        "revision_id": article.revision_id,
        "title": article.title,
        "url": getattr(article, "url", None),
        "wikidata_id": getattr(article, "wikidata_id", None),
        "retrieved_at": getattr(article, "retrieved_at", None),
        "source": getattr(article, "source", None),
    }


def article_rows(article: Article) -> list[dict]:
    """One row per section of the article, or a single ``empty`` row when nothing is left."""
    base = _article_fields(article)
    sections = parse_sections(article.html, title=article.title)
    if not sections:
        return [{**base, "status": "empty", "reason": "no-text", "detail": None, **dict.fromkeys(_SECTION_FIELDS)}]
    return [
        {
            **base,
            "status": "ok",
            "reason": None,
            "detail": None,
            "section_index": section.index,
            "section_heading": section.heading,
            "section_level": section.level,
            "section_path": list(section.path),
            "section_kind": section.kind,
            "text": section.text,
        }
        for section in sections
    ]


def failure_row(failure: FetchFailure) -> dict:
    return {
        **_article_fields(failure),
        "status": "failed",
        "reason": failure.reason,
        "detail": failure.detail,
        **dict.fromkeys(_SECTION_FIELDS),
    }


class FetchStep:
    """Fetches and parses the remaining page revisions, one atomic unit at a time."""

    name = STEP

    def __init__(self, source: WikipediaSource, run: RunFolder, unit_size: int, workers: int):
        self.source = source
        self.run_folder = run
        self.unit_size = unit_size
        self.workers = workers
        self.stats = SourceStats()

    def run(self, pages: Sequence[PageRef], advance: Callable[[int], None] = lambda n: None) -> None:
        done = settled_pages(self.run_folder.read_units(STEP))
        remaining = [page for page in pages if (page.wiki, page.page_id, page.revision_id) not in done]
        self.stats.update("pages_reused", len(pages) - len(remaining))
        advance(len(pages) - len(remaining))
        units = plan_units(
            remaining, wiki_of=lambda page: page.wiki, size=self.unit_size, key=lambda p: (p.page_id, p.revision_id)
        )
        for _name, count in run_units(units, self._fetch_unit, self.workers):
            advance(count)

    def _fetch_unit(self, name: str, pages: Sequence[PageRef]) -> int:
        wiki = pages[0].wiki
        rows: list[dict] = []
        for record in self.source.fetch(wiki, pages):
            if isinstance(record, FetchFailure):
                self.stats.update("failed")
                rows.append(failure_row(record))
                continue
            section_rows = article_rows(record)
            self.stats.update("fetched")
            self.stats.update("sections", sum(1 for row in section_rows if row["status"] == "ok"))
            rows.extend(section_rows)
        self.run_folder.write_unit(STEP, name, pa.Table.from_pylist(rows, schema=FETCH_SCHEMA))
        return len(pages)


def final_fetch_table(run: RunFolder) -> pa.Table:
    """All fetched sections; a revision that failed and later succeeded keeps only its success."""
    table = run.read_units(STEP)
    if table is None:
        return FETCH_SCHEMA.empty_table()
    settled = settled_pages(table)
    failed = table.filter(pc.equal(table["status"], "failed")).to_pylist()
    still_failed: dict[tuple[str, int, int], dict] = {}
    for row in failed:
        key = (row["wiki"], row["page_id"], row["revision_id"])
        if key not in settled:
            still_failed[key] = row
    good = table.filter(pc.not_equal(table["status"], "failed"))
    failures = pa.Table.from_pylist([still_failed[key] for key in sorted(still_failed)], schema=FETCH_SCHEMA)
    return pa.concat_tables([good.cast(FETCH_SCHEMA), failures])
