"""BM25 candidates: the top-k English Wikipedia articles for each caption, and their texts.

The search runs over a local snapshot (an Enterprise HTML dump, a parquet of articles such as
``wikimedia/wikipedia``, or the embedded sample) through ``SnapshotSource``, which streams the
input into a memory-mapped bm25s index over title and lead. Candidates are stored with their BM25
rank, and with the order annotators will see them in: a deterministic shuffle seeded per image,
never the score order, so that annotation order tells nothing about the ranking.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from m4build.pipelines.ravenea.captions import Caption
from m4build.progress import NullProgress, ProgressReporter
from m4build.records import Article, PageHit
from m4build.sources.wikipedia.base import WikipediaSource
from m4build.text.sections import parse_sections

WIKI = "enwiki"

CANDIDATE_SCHEMA = pa.schema(
    [
        ("file_name", pa.string()),
        ("enwiki_id", pa.int64()),
        ("bm25_rank", pa.int32()),
        ("annotation_order", pa.int32()),
    ]
)
ARTICLE_SCHEMA = pa.schema(
    [
        ("enwiki_id", pa.int64()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("url", pa.string()),
        ("revision_id", pa.int64()),
        ("wikidata_id", pa.string()),
        ("retrieved_at", pa.string()),
    ]
)


@dataclass(frozen=True)
class Candidates:
    candidates: pa.Table
    articles: pa.Table
    missing: list[str]  # pages found by search but absent from the store (reported, not used)


def find_candidates(
    source: WikipediaSource,
    captions: Sequence[Caption],
    *,
    k: int,
    seed: int,
    progress: ProgressReporter | None = None,
) -> Candidates:
    progress = progress or NullProgress()
    hits: dict[str, list[PageHit]] = {}
    with progress.task("BM25 candidates", total=len(captions)) as advance:
        for caption in captions:
            if caption.text:
                hits[caption.file_name] = source.search(WIKI, caption.text, k)
            advance(1)
    pages = {hit.page_id: hit.ref for found in hits.values() for hit in found}
    articles: dict[int, Article] = {}
    missing = []
    for fetched in source.fetch(WIKI, [pages[page_id] for page_id in sorted(pages)]):
        if isinstance(fetched, Article):
            articles[fetched.page_id] = fetched
        else:
            missing.append(f"{fetched.title} ({fetched.page_id}): {fetched.detail}")
    rows = []
    for file_name, found in sorted(hits.items()):
        kept = [hit for hit in found if hit.page_id in articles]
        order = annotation_order(file_name, [hit.page_id for hit in kept], seed)
        rows += [
            {"file_name": file_name, "enwiki_id": hit.page_id, "bm25_rank": hit.rank, "annotation_order": order[hit.page_id]}
            for hit in kept
        ]
    return Candidates(
        candidates=pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA),
        articles=pa.Table.from_pylist([_article_row(articles[p]) for p in sorted(articles)], schema=ARTICLE_SCHEMA),
        missing=missing,
    )


def annotation_order(file_name: str, page_ids: Sequence[int], seed: int) -> dict[int, int]:
    """Position of each page in what annotators see: sorted by a seeded hash, not by score."""
    def key(page_id: int) -> str:
        return hashlib.sha256(f"{seed}:{file_name}:{page_id}".encode()).hexdigest()

    return {page_id: position for position, page_id in enumerate(sorted(page_ids, key=key))}


def article_text(article: Article) -> str:
    """The article as annotators and retrievers read it: its sections' text, in order."""
    sections = parse_sections(article.html, title=article.title)
    return "\n\n".join(section.text for section in sections if section.text.strip())


def _article_row(article: Article) -> dict[str, object]:
    return {
        "enwiki_id": article.page_id,
        "title": article.title,
        "text": article_text(article),
        "url": article.url,
        "revision_id": article.revision_id,
        "wikidata_id": article.wikidata_id,
        "retrieved_at": article.retrieved_at,
    }
