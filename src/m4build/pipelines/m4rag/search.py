"""The search step: every distinct (wiki, query text) searched once, results kept per unit.

Rows hold one search hit each (rank, page id, latest revision, Wikidata id, language links); a
query without hits keeps one row with an empty rank so that it counts as done, and a query that
kept failing keeps one row with ``status="failed"`` so that it is reported, never dropped, and
retried on the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from m4build.pipelines.m4rag.units import plan_units, run_units
from m4build.records import PageHit
from m4build.runs import RunFolder
from m4build.sources.wikipedia import SearchFailed, SourceStats, WikipediaSource

STEP = "search"

SEARCH_SCHEMA = pa.schema(
    [
        ("wiki", pa.string()),
        ("text", pa.string()),
        ("status", pa.string()),  # "ok" or "failed"
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("rank", pa.int32()),
        ("page_id", pa.int64()),
        ("revision_id", pa.int64()),
        ("title", pa.string()),
        ("wikidata_id", pa.string()),
        ("langlinks", pa.list_(pa.struct([("lang", pa.string()), ("title", pa.string())]))),
    ]
)


def _hit_row(wiki: str, text: str, hit: PageHit) -> dict:
    return {
        "wiki": wiki,
        "text": text,
        "status": "ok",
        "reason": None,
        "detail": None,
        "rank": hit.rank,
        "page_id": hit.page_id,
        "revision_id": hit.revision_id,
        "title": hit.title,
        "wikidata_id": hit.wikidata_id,
        "langlinks": [{"lang": lang, "title": title} for lang, title in hit.langlinks],
    }


def _bare_row(wiki: str, text: str, status: str, reason: str | None = None, detail: str | None = None) -> dict:
    return {
        "wiki": wiki,
        "text": text,
        "status": status,
        "reason": reason,
        "detail": detail,
        "rank": None,
        "page_id": None,
        "revision_id": None,
        "title": None,
        "wikidata_id": None,
        "langlinks": [],
    }


def settled_keys(table: pa.Table | None) -> set[tuple[str, str]]:
    """Keys with a successful answer in any finished unit; failed ones are retried."""
    if table is None or table.num_rows == 0:
        return set()
    ok = table.filter(pc.equal(table["status"], "ok"))
    return set(zip(ok["wiki"].to_pylist(), ok["text"].to_pylist()))


class SearchStep:
    """Searches the remaining query keys on the source, one atomic unit at a time."""

    name = STEP

    def __init__(self, source: WikipediaSource, run: RunFolder, k: int, unit_size: int, workers: int):
        self.source = source
        self.run_folder = run
        self.k = k
        self.unit_size = unit_size
        self.workers = workers
        self.stats = SourceStats()

    def run(self, keys: Sequence[tuple[str, str]], advance: Callable[[int], None] = lambda n: None) -> None:
        done = settled_keys(self.run_folder.read_units(STEP))
        remaining = [key for key in keys if key not in done]
        self.stats.update("queries_reused", len(keys) - len(remaining))
        advance(len(keys) - len(remaining))
        units = plan_units(remaining, wiki_of=lambda key: key[0], size=self.unit_size, key=lambda key: key)
        for _name, count in run_units(units, self._search_unit, self.workers):
            advance(count)

    def _search_unit(self, name: str, keys: Sequence[tuple[str, str]]) -> int:
        rows: list[dict] = []
        for wiki, text in keys:
            try:
                hits = self.source.search(wiki, text, self.k)
            except SearchFailed as failure:
                rows.append(_bare_row(wiki, text, "failed", failure.reason, failure.detail))
                self.stats.update("failed")
                continue
            self.stats.update("queries_searched")
            self.stats.update("hits", len(hits))
            rows.extend(_hit_row(wiki, text, hit) for hit in hits)
            if not hits:
                rows.append(_bare_row(wiki, text, "ok"))
        self.run_folder.write_unit(STEP, name, pa.Table.from_pylist(rows, schema=SEARCH_SCHEMA))
        return len(keys)


def final_search_table(run: RunFolder) -> pa.Table:
    """All search rows, keeping for each key its successful answer if it ever had one.

    A key is searched again only while it has no successful answer, so successes never repeat; a
    key that failed in one attempt and succeeded in a later one keeps only the success, and a key
    that only ever failed keeps one failure row.
    """
    table = run.read_units(STEP)
    if table is None:
        return SEARCH_SCHEMA.empty_table()
    ok = table.filter(pc.equal(table["status"], "ok"))
    ok_keys = set(zip(ok["wiki"].to_pylist(), ok["text"].to_pylist()))
    failed_rows: dict[tuple[str, str], dict] = {}
    for row in table.filter(pc.equal(table["status"], "failed")).to_pylist():
        key = (row["wiki"], row["text"])
        if key not in ok_keys:
            failed_rows[key] = row
    failures = pa.Table.from_pylist([failed_rows[key] for key in sorted(failed_rows)], schema=SEARCH_SCHEMA)
    return pa.concat_tables([ok.cast(SEARCH_SCHEMA), failures])
