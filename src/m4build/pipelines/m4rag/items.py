"""Benchmark items kept in the run folder, so that a resumed run forms the very same queries."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa

from m4build.records import BenchmarkItem, Query

ITEMS_SCHEMA = pa.schema(
    [
        ("benchmark", pa.string()),
        ("item_id", pa.string()),
        ("lang", pa.string()),
        ("question", pa.string()),
        ("answer", pa.string()),
        ("question_en", pa.string()),
        ("answer_en", pa.string()),
        ("domain_en", pa.string()),
        ("domain", pa.string()),
        ("extra", pa.string()),  # JSON object of benchmark-specific fields, for provenance
    ]
)

QUERY_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("query_type", pa.string()),
        ("query_lang", pa.string()),
        ("wiki", pa.string()),
        ("text", pa.string()),
    ]
)


def items_to_table(items: Sequence[BenchmarkItem]) -> pa.Table:
    rows = [
        {
            "benchmark": item.benchmark,
            "item_id": item.item_id,
            "lang": item.lang,
            "question": item.question,
            "answer": item.answer,
            "question_en": item.question_en,
            "answer_en": item.answer_en,
            "domain_en": item.domain_en,
            "domain": item.domain,
            "extra": json.dumps(item.extra, ensure_ascii=False, sort_keys=True),
        }
        for item in items
    ]
    return pa.Table.from_pylist(rows, schema=ITEMS_SCHEMA)


def items_from_table(table: pa.Table) -> list[BenchmarkItem]:
    return [
        BenchmarkItem(**{**row, "extra": json.loads(row["extra"] or "{}")})
        for row in table.to_pylist()
    ]


def queries_to_table(queries: Sequence[Query]) -> pa.Table:
    rows = [
        {"item_id": q.item_id, "query_type": q.query_type, "query_lang": q.query_lang, "wiki": q.wiki, "text": q.text}
        for q in queries
    ]
    return pa.Table.from_pylist(rows, schema=QUERY_SCHEMA)
