"""The assemble step: sections + provenance -> deduplicated, Hub-loadable records.

Everything here is a pure function of the finished units, so assembling twice (or after a kill
and a resume) gives identical data. Provenance is joined at the article level: every
(item, query type, query language, rank) that retrieved an article travels with each of its
sections, so that a passage can always be traced back to the VQA items that brought it in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from m4build.text.normalize import text_hash
from m4build.wikis import subdomain

RETRIEVED_BY = pa.struct(
    [
        ("item_id", pa.string()),
        ("query_type", pa.string()),
        ("query_lang", pa.string()),
        ("rank", pa.int32()),
    ]
)

CORPUS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("wiki", pa.string()),
        ("language", pa.string()),
        ("page_id", pa.int64()),
        ("revision_id", pa.int64()),
        ("wikidata_id", pa.string()),
        ("title", pa.string()),
        ("url", pa.string()),
        ("section_index", pa.int32()),
        ("section_heading", pa.string()),
        ("section_path", pa.list_(pa.string())),
        ("section_kind", pa.string()),
        ("text", pa.string()),
        ("retrieved_at", pa.string()),
        ("source", pa.string()),
        ("retrieved_by", pa.list_(RETRIEVED_BY)),
    ]
)

QUERIES_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("query_type", pa.string()),
        ("query_lang", pa.string()),
        ("wiki", pa.string()),
        ("text", pa.string()),
        ("status", pa.string()),
        ("hits", pa.list_(pa.struct([("rank", pa.int32()), ("wiki", pa.string()), ("page_id", pa.int64())]))),
    ]
)


@dataclass
class Assembled:
    """The assembled corpus: records per wiki, the query table, and what was dropped or failed."""

    by_wiki: dict[str, pa.Table]
    queries: pa.Table
    wikis_without_articles: list[str] = field(default_factory=list)
    duplicate_sections: int = 0
    empty_articles: int = 0
    search_failures: list[dict] = field(default_factory=list)
    fetch_failures: list[dict] = field(default_factory=list)


def _hits_by_key(search: pa.Table) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(wiki, query text) -> [(rank, page id)] of successful searches."""
    ok = search.filter(pc.and_(pc.equal(search["status"], "ok"), pc.is_valid(search["page_id"])))
    hits: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for wiki, text, rank, page_id in zip(
        ok["wiki"].to_pylist(), ok["text"].to_pylist(), ok["rank"].to_pylist(), ok["page_id"].to_pylist()
    ):
        hits[(wiki, text)].append((rank, page_id))
    return hits


Hits = Mapping[tuple[str, str], list[tuple[int, int]]]
"""(wiki, query text) -> [(rank, page id)] of a successful search."""


def provenance(queries: pa.Table, hits: Hits) -> dict[tuple[str, int], list[dict]]:
    """(wiki, page id) -> every (item, query type, query language, rank) that retrieved it, sorted."""
    found: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for item_id, query_type, query_lang, wiki, text in zip(
        *(queries[name].to_pylist() for name in ("item_id", "query_type", "query_lang", "wiki", "text"))
    ):
        for rank, page_id in hits.get((wiki, text), ()):
            found[(wiki, page_id)].append(
                {"item_id": item_id, "query_type": query_type, "query_lang": query_lang, "rank": rank}
            )
    for entries in found.values():
        entries.sort(key=lambda e: (e["item_id"], e["query_type"], e["query_lang"], e["rank"]))
    return found


def query_table(queries: pa.Table, search: pa.Table, hits: Hits) -> pa.Table:
    """One row per formed query with its ranked hits, so evaluations can join items to passages."""
    failed = search.filter(pc.equal(search["status"], "failed"))
    failed_keys = set(zip(failed["wiki"].to_pylist(), failed["text"].to_pylist()))
    rows = []
    for item_id, query_type, query_lang, wiki, text in zip(
        *(queries[name].to_pylist() for name in ("item_id", "query_type", "query_lang", "wiki", "text"))
    ):
        ranked = sorted(hits.get((wiki, text), ()))
        rows.append(
            {
                "item_id": item_id,
                "query_type": query_type,
                "query_lang": query_lang,
                "wiki": wiki,
                "text": text,
                "status": "failed" if (wiki, text) in failed_keys else "ok",
                "hits": [{"rank": rank, "wiki": wiki, "page_id": page_id} for rank, page_id in ranked],
            }
        )
    rows.sort(key=lambda r: (r["item_id"], r["query_type"], r["query_lang"]))
    return pa.Table.from_pylist(rows, schema=QUERIES_SCHEMA)


def wikidata_ids(search: pa.Table) -> dict[tuple[str, int], str]:
    """Wikidata ids reported by search (the API gives them there, not with the content)."""
    ok = search.filter(pc.is_valid(search["wikidata_id"]))
    return {
        (wiki, page_id): qid
        for wiki, page_id, qid in zip(ok["wiki"].to_pylist(), ok["page_id"].to_pylist(), ok["wikidata_id"].to_pylist())
    }


def corpus_record(
    row: dict, retrieved_by: Mapping[tuple[str, int], list[dict]], qids: Mapping[tuple[str, int], str]
) -> dict:
    """A fetched section row turned into a published record with its id and provenance."""
    key = (row["wiki"], row["page_id"])
    return {
        "id": f"{row['wiki']}:{row['page_id']}:{row['revision_id']}:{row['section_index']}",
        "wiki": row["wiki"],
        "language": subdomain(row["wiki"]),
        "page_id": row["page_id"],
        "revision_id": row["revision_id"],
        "wikidata_id": row["wikidata_id"] or qids.get(key),
        "title": row["title"],
        "url": row["url"],
        "section_index": row["section_index"],
        "section_heading": row["section_heading"],
        "section_path": row["section_path"],
        "section_kind": row["section_kind"],
        "text": row["text"],
        "retrieved_at": row["retrieved_at"],
        "source": row["source"],
        "retrieved_by": retrieved_by.get(key, []),
    }


def assemble(queries: pa.Table, search: pa.Table, fetched: pa.Table) -> Assembled:
    """Build the final records: dedup sections by normalised text, attach provenance, split by wiki."""
    hits = _hits_by_key(search)
    retrieved_by = provenance(queries, hits)
    qids = wikidata_ids(search)
    sections = fetched.filter(pc.equal(fetched["status"], "ok"))
    seen_hashes: set[str] = set()
    by_wiki: dict[str, pa.Table] = {}
    duplicates = 0
    # One wiki at a time keeps memory proportional to the largest wiki, not the whole corpus.
    for wiki in sorted(set(sections["wiki"].to_pylist())):
        part = sections.filter(pc.equal(sections["wiki"], wiki))
        part = part.take(pc.sort_indices(part, sort_keys=[("page_id", "ascending"), ("section_index", "ascending")]))
        rows = []
        for row in part.to_pylist():
            digest = text_hash(row["text"])
            if digest in seen_hashes:
                duplicates += 1
                continue
            seen_hashes.add(digest)
            rows.append(corpus_record(row, retrieved_by, qids))
        by_wiki[wiki] = pa.Table.from_pylist(rows, schema=CORPUS_SCHEMA)
    searched = set(queries["wiki"].to_pylist())
    empty = fetched.filter(pc.equal(fetched["status"], "empty")).num_rows
    return Assembled(
        by_wiki=by_wiki,
        queries=query_table(queries, search, hits),
        wikis_without_articles=sorted(searched - set(by_wiki)),
        duplicate_sections=duplicates,
        empty_articles=empty,
        search_failures=search.filter(pc.equal(search["status"], "failed"))
        .select(["wiki", "text", "reason", "detail"])
        .to_pylist(),
        fetch_failures=fetched.filter(pc.equal(fetched["status"], "failed"))
        .select(["wiki", "page_id", "revision_id", "title", "reason", "detail"])
        .to_pylist(),
    )

