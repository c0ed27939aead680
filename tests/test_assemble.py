"""Assembly: dedup before fetch, exact-duplicate sections, provenance per article, failures kept."""

from __future__ import annotations

import pyarrow as pa

from m4build.pipelines.m4rag.assemble import assemble
from m4build.pipelines.m4rag.fetch import FETCH_SCHEMA, pages_to_fetch
from m4build.pipelines.m4rag.items import QUERY_SCHEMA
from m4build.pipelines.m4rag.search import SEARCH_SCHEMA


def search_row(wiki, text, rank, page_id, revision_id, status="ok", qid=None):
    return {"wiki": wiki, "text": text, "status": status, "reason": None if status == "ok" else "http-503",
            "detail": None, "rank": rank, "page_id": page_id, "revision_id": revision_id,
            "title": f"P{page_id}" if page_id else None, "wikidata_id": qid, "langlinks": []}


def section_row(wiki, page_id, revision_id, index, text, status="ok"):
    return {"wiki": wiki, "page_id": page_id, "revision_id": revision_id, "title": f"P{page_id}",
            "url": f"https://x/{page_id}", "wikidata_id": None, "retrieved_at": "2026-01-01T00:00:00Z",
            "source": "api", "status": status, "reason": None, "detail": None, "section_index": index,
            "section_heading": "Lead" if index == 0 else "H", "section_level": 1, "section_path": ["Lead"],
            "section_kind": "lead" if index == 0 else "section", "text": text}


QUERIES = pa.Table.from_pylist(
    [
        {"item_id": "a", "query_type": "answer", "query_lang": "en", "wiki": "enwiki", "text": "sushi"},
        {"item_id": "b", "query_type": "answer", "query_lang": "en", "wiki": "enwiki", "text": "sushi"},
        {"item_id": "a", "query_type": "answer", "query_lang": "ja", "wiki": "jawiki", "text": "寿司"},
        {"item_id": "a", "query_type": "question", "query_lang": "en", "wiki": "enwiki", "text": "what dish"},
    ],
    schema=QUERY_SCHEMA,
)
SEARCH = pa.Table.from_pylist(
    [
        search_row("enwiki", "sushi", 1, 10, 101, qid="Q46383"),
        search_row("enwiki", "sushi", 2, 11, 111),
        search_row("jawiki", "寿司", 1, 20, 201),
        search_row("enwiki", "what dish", None, None, None, status="failed"),
    ],
    schema=SEARCH_SCHEMA,
)


def test_pages_are_deduplicated_to_the_newest_revision_before_fetching():
    search = pa.Table.from_pylist(
        [search_row("enwiki", "q1", 1, 10, 100), search_row("enwiki", "q2", 3, 10, 105),
         search_row("enwiki", "q3", 1, 12, 7), search_row("enwiki", "q4", None, None, None, status="failed")],
        schema=SEARCH_SCHEMA,
    )
    assert [(p.page_id, p.revision_id) for p in pages_to_fetch(search)] == [(10, 105), (12, 7)]


def test_provenance_duplicates_and_failures():
    fetched = pa.Table.from_pylist(
        [
            section_row("enwiki", 10, 101, 0, "Sushi is a Japanese dish."),
            section_row("enwiki", 10, 101, 1, "See also: rice."),
            section_row("enwiki", 11, 111, 0, "SUSHI is a  Japanese dish!"),  # same text once normalised
            section_row("jawiki", 20, 201, 0, "寿司は日本料理。"),
        ],
        schema=FETCH_SCHEMA,
    )
    result = assemble(QUERIES, SEARCH, fetched)
    english = result.by_wiki["enwiki"].to_pylist()
    assert [row["id"] for row in english] == ["enwiki:10:101:0", "enwiki:10:101:1"]
    assert result.duplicate_sections == 1
    assert english[0]["wikidata_id"] == "Q46383"  # joined from the search answer
    assert english[0]["retrieved_by"] == [
        {"item_id": "a", "query_type": "answer", "query_lang": "en", "rank": 1},
        {"item_id": "b", "query_type": "answer", "query_lang": "en", "rank": 1},
    ]
    assert result.by_wiki["jawiki"].to_pylist()[0]["language"] == "ja"
    assert result.search_failures == [{"wiki": "enwiki", "text": "what dish", "reason": "http-503", "detail": None}]
    failed_query = [q for q in result.queries.to_pylist() if q["query_type"] == "question"][0]
    assert failed_query["status"] == "failed" and failed_query["hits"] == []


def test_wikis_that_retrieved_nothing_are_named():
    fetched = pa.Table.from_pylist([section_row("enwiki", 10, 101, 0, "Sushi.")], schema=FETCH_SCHEMA)
    result = assemble(QUERIES, SEARCH, fetched)
    assert list(result.by_wiki) == ["enwiki"]
    assert result.wikis_without_articles == ["jawiki"]
