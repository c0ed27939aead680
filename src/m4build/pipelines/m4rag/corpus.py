"""The M4-RAG corpus pipeline: items -> queries -> search -> fetch + sections -> assembled corpus.

Each step is resumable on its own (see ``m4build.runs``): items and queries are frozen into the
run folder on first run, search and fetch keep atomic work units, and assembly is a pure function
of those units. Running the same command again after a kill finishes the job; running it on a
finished folder re-assembles the same bytes and costs no request.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from m4build import __version__
from m4build.dataset_card import render_card
from m4build.dataset_folder import ConfigFiles, write_config
from m4build.languages import Language
from m4build.pipelines.m4rag.assemble import Assembled, assemble
from m4build.pipelines.m4rag.fetch import FetchStep, final_fetch_table, pages_to_fetch
from m4build.pipelines.m4rag.items import items_from_table, items_to_table, queries_to_table
from m4build.pipelines.m4rag.queries import former_for, unique_keys
from m4build.pipelines.m4rag.search import SearchStep, final_search_table
from m4build.progress import NullProgress, ProgressReporter
from m4build.records import BenchmarkItem
from m4build.runs import (
    RunFolder,
    atomic_write_json,
    atomic_write_parquet,
    atomic_write_text,
    package_versions,
    utc_now,
)
from m4build.sources.wikipedia import WikipediaSource
from m4build.wikis import subdomain

PACKAGES = ("m4build", "mwclient", "requests", "lxml", "bm25s", "pyarrow", "datasets", "typer", "rich")


@dataclass
class CorpusJob:
    """Everything one corpus build needs; the CLI fills it from the recipe and flags."""

    benchmark: str
    languages: Sequence[Language]
    recipe: Mapping[str, Any]
    source: WikipediaSource
    source_info: Mapping[str, Any]  # kind, paths, endpoint, user agent: recorded, never secrets
    run: RunFolder
    load_items: Callable[[], list[BenchmarkItem]]
    workers: int = 4


@dataclass
class CorpusResult:
    """What a build produced, for the CLI summary and for tests."""

    root: Path
    resumed: bool
    counts: dict[str, int]
    configs: dict[str, int]
    requests: dict[str, int]
    failures: dict[str, int]
    manifest: dict[str, Any] = field(repr=False, default_factory=dict)


def settings_of(job: CorpusJob) -> dict[str, Any]:
    """The settings that define the corpus; a run folder may only be resumed with the same ones."""
    recipe = job.recipe
    return {
        "benchmark": job.benchmark,
        "languages": sorted(language.code for language in job.languages),
        # The endpoint is left out on purpose: a mirror or a new port serves the same wiki.
        "source": {key: job.source_info[key] for key in ("kind", "paths") if key in job.source_info},
        "query_types": list(recipe["query_types"]),
        "query_languages": list(recipe["query_languages"]),
        "k": int(recipe["k"]),
        "max_query_chars": int(recipe["max_query_chars"]),
        "snapshot_date": str(recipe["snapshot_date"]),
        "benchmark_options": recipe.get("benchmarks", {}).get(job.benchmark, {}),
    }


def frozen_items(job: CorpusJob) -> tuple[list[BenchmarkItem], list[dict]]:
    """The benchmark items (and those the loader had to skip), read once and kept in the run folder."""
    path = job.run.state_dir / "items.parquet"
    skipped_path = job.run.state_dir / "skipped_items.json"
    if path.exists():
        skipped = json.loads(skipped_path.read_text(encoding="utf-8")) if skipped_path.exists() else []
        return items_from_table(pq.read_table(path)), skipped
    loaded = job.load_items()
    skipped = [asdict(item) for item in getattr(loaded, "skipped", [])]
    items = sorted(loaded, key=lambda item: item.item_id)
    atomic_write_json(skipped_path, skipped)
    atomic_write_parquet(path, items_to_table(items))
    return items, skipped


def frozen_queries(job: CorpusJob, items: Sequence[BenchmarkItem]) -> pa.Table:
    path = job.run.state_dir / "queries.parquet"
    if path.exists():
        return pq.read_table(path)
    table = queries_to_table(list(former_for(job.languages, job.recipe).run(items)))
    atomic_write_parquet(path, table)
    return table


def build_corpus(job: CorpusJob, progress: ProgressReporter | None = None) -> CorpusResult:
    """Run (or resume) the whole pipeline and write the Hub-loadable corpus into the run folder."""
    progress = progress or NullProgress()
    started = time.monotonic()
    started_at = utc_now()
    run = job.run
    resumed = run.claim(settings_of(job))
    run.clean_temp_files()

    items, skipped = frozen_items(job)
    queries = frozen_queries(job, items)
    keys = unique_keys(zip(queries["wiki"].to_pylist(), queries["text"].to_pylist()))

    search_step = SearchStep(
        job.source, run, k=int(job.recipe["k"]), unit_size=int(job.recipe["search_unit_size"]), workers=job.workers
    )
    with progress.task("search", total=len(keys)) as advance:
        search_step.run(keys, advance)
    search = final_search_table(run)

    pages = pages_to_fetch(search)
    fetch_step = FetchStep(job.source, run, unit_size=int(job.recipe["fetch_unit_size"]), workers=job.workers)
    with progress.task("fetch + sections", total=len(pages)) as advance:
        fetch_step.run(pages, advance)
    fetched = final_fetch_table(run)

    assembled = assemble(queries, search, fetched)
    configs = publish(job, assembled)

    attempt = {
        "started_at": started_at,
        "finished_at": utc_now(),
        "seconds": round(time.monotonic() - started, 3),
        "requests": job.source.stats.as_dict(),
        "search": search_step.stats.as_dict(),
        "fetch": fetch_step.stats.as_dict(),
    }
    run.log_attempt(attempt)
    counts = {
        "items": len(items),
        "items_skipped": len(skipped),
        "languages": len(job.languages),
        "queries": queries.num_rows,
        "unique_queries": len(keys),
        "unique_articles": len(pages),
        "articles_with_text": sum(len(set(t["page_id"].to_pylist())) for t in assembled.by_wiki.values()),
        "sections": sum(t.num_rows for t in assembled.by_wiki.values()),
        "duplicate_sections_removed": assembled.duplicate_sections,
        "articles_without_text": assembled.empty_articles,
    }
    failures = {"search": len(assembled.search_failures), "fetch": len(assembled.fetch_failures)}
    manifest = build_manifest(job, counts, configs, failures, assembled, run.attempts())
    manifest["skipped_items"] = {"count": len(skipped), "examples": skipped[:20], "file": "state/skipped_items.json"}
    run.write_manifest(manifest)
    # The card states the manifest's facts, so it is written last, from the manifest itself.
    atomic_write_text(run.root / "README.md", render_card(manifest, configs))
    return CorpusResult(
        root=run.root,
        resumed=resumed,
        counts=counts,
        configs={config.name: config.rows for config in configs},
        requests=manifest["requests"],
        failures=failures,
        manifest=manifest,
    )


def publish(job: CorpusJob, assembled: Assembled) -> list[ConfigFiles]:
    """Write one config per wiki, ``default`` over all of them, ``queries`` and the failures list."""
    root = job.run.root
    configs = [
        write_config(root, subdomain(wiki), table, folder=f"corpus/{subdomain(wiki)}")
        for wiki, table in assembled.by_wiki.items()
    ]
    total = sum(config.rows for config in configs)
    queries = write_config(root, "queries", assembled.queries)
    # Parquet readers refuse a file without rows, so a wiki without articles gets no config (the
    # card and the manifest name it instead), and ``default`` exists only over a non-empty corpus.
    default = [ConfigFiles("default", "train", "data/corpus/*/train-*.parquet", total)] if total else []
    all_configs = [*default, *configs, queries]
    failures = [{"step": "search", **row} for row in assembled.search_failures] + [
        {"step": "fetch", **row} for row in assembled.fetch_failures
    ]
    atomic_write_text(
        root / "failures.jsonl", "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in failures)
    )
    return all_configs


def summed(attempts: Sequence[Mapping[str, Any]], key: str) -> dict[str, int]:
    total: Counter[str] = Counter()
    for attempt in attempts:
        total.update(attempt.get(key, {}))
    return dict(sorted(total.items()))


def build_manifest(
    job: CorpusJob,
    counts: Mapping[str, int],
    configs: Sequence[ConfigFiles],
    failures: Mapping[str, int],
    assembled: Assembled,
    attempts: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    examples = (assembled.search_failures + assembled.fetch_failures)[:20]
    return {
        "m4build_version": __version__,
        "recipe": dict(job.recipe),
        "settings": settings_of(job),
        "source": dict(job.source_info),
        "versions": package_versions(PACKAGES),
        "counts": dict(counts),
        "configs": {config.name: config.rows for config in configs},
        "requests": summed(attempts, "requests"),
        "steps": {"search": summed(attempts, "search"), "fetch": summed(attempts, "fetch")},
        # What the last attempt did not have to redo: answers and pages finished by earlier
        # attempts, and snapshot indexes loaded instead of built.
        "cache_hits": {
            "queries_from_earlier_attempts": attempts[-1]["search"].get("queries_reused", 0) if attempts else 0,
            "pages_from_earlier_attempts": attempts[-1]["fetch"].get("pages_reused", 0) if attempts else 0,
            "snapshot_indexes_loaded": attempts[-1]["requests"].get("cache_hits", 0) if attempts else 0,
        },
        "failures": {**failures, "examples": examples, "file": "failures.jsonl"},
        "wikis_without_articles": list(assembled.wikis_without_articles),
        "attempts": len(attempts),
        "first_started_at": attempts[0]["started_at"] if attempts else None,
        "last_finished_at": attempts[-1]["finished_at"] if attempts else None,
    }
