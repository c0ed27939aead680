"""``m4build corpus``: build an M4-RAG Wikipedia knowledge corpus for a VQA benchmark."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from m4build.cli.options import comma_list
from m4build.errors import UsageError
from m4build.languages import Language, load_languages
from m4build.pipelines.m4rag.corpus import CorpusJob, CorpusResult, build_corpus
from m4build.pipelines.m4rag.queries import former_for, unique_keys
from m4build.progress import RichProgress
from m4build.recipes import load_recipe, with_overrides
from m4build.runs import RunFolder
from m4build.sources.benchmarks import BENCHMARKS, load_items
from m4build.sources.wikipedia.factory import open_source

SOURCES = ("api", "dump", "sample")



def corpus_command(
    benchmark: str = typer.Argument(..., help=f"The benchmark whose items drive retrieval: {', '.join(BENCHMARKS)}."),
    dump: list[Path] = typer.Argument(
        None, help="With --source dump: Enterprise HTML dump files (.ndjson, .ndjson.gz, .tar.gz, .json) or parquet."
    ),
    lang: str = typer.Option("all", "--lang", "-l", help="'all', or benchmark codes / base languages, comma-separated."),
    source: str = typer.Option(None, "--source", "-s", help="Where articles come from: api, dump or sample."),
    out: Path = typer.Option(None, "--out", "-o", help="Run folder (created, or resumed if it exists)."),
    recipe_path: Path = typer.Option(None, "--recipe", help="A recipe YAML to start from (default builders/m4rag.yaml)."),
    items: str = typer.Option(
        None, "--items", help="Benchmark items: 'hub', 'sample', or local files (comma-separated JSONL/parquet/CSV)."
    ),
    k: int = typer.Option(None, "--k", min=1, max=50, help="Articles per query and language (paper: 25)."),
    query_types: str = typer.Option(None, "--query-types", help="Comma-separated: question, answer, culture."),
    query_languages: str = typer.Option(None, "--query-languages", help="Comma-separated: en, native."),
    limit_per_lang: int = typer.Option(None, "--limit-per-lang", min=1, help="Use only the first N items per language."),
    contact: str = typer.Option(None, "--contact", help="Email or URL for the User-Agent of live runs (or M4BUILD_CONTACT)."),
    endpoint: str = typer.Option(None, "--endpoint", help="API URL template, default https://{subdomain}.wikipedia.org/w/api.php."),
    workers: int = typer.Option(None, "--workers", min=1, help="Parallel work units (per-wiki request limits still apply)."),
    cache_dir: Path = typer.Option(None, "--cache-dir", help="Where snapshot search indexes are kept (default: in the run folder)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Load items and form queries, print the plan, fetch nothing."),
) -> None:
    """Build the M4-RAG Wikipedia corpus for WorldCuisines or CVQA.

    Example: m4build corpus worldcuisines --lang all --source sample --out runs/wc-sample
    """
    if benchmark not in BENCHMARKS:
        raise UsageError(f"unknown benchmark {benchmark!r}", f"Valid benchmarks: {', '.join(BENCHMARKS)}.")
    recipe = with_overrides(
        load_recipe("m4rag", recipe_path),
        {
            "source": source,
            "k": k,
            "query_types": comma_list(query_types),
            "query_languages": comma_list(query_languages),
            "contact": contact,
        },
    )
    kind = recipe["source"]
    if kind not in SOURCES:
        raise UsageError(f"unknown source {kind!r}", f"Valid sources: {', '.join(SOURCES)}.")
    if kind == "dump" and not dump:
        raise UsageError("--source dump needs the dump files", "Example: m4build corpus worldcuisines --source dump enwiki.ndjson")
    if dump and kind != "dump":
        raise UsageError(f"files were given ({dump[0]} ...) but the source is {kind!r}", "Add --source dump to build from them.")

    languages = load_languages().resolve(benchmark, lang)
    item_source = items or ("sample" if kind == "sample" else "hub")
    out = out or Path("runs") / f"m4rag-{benchmark}-{kind}"
    run = RunFolder(out)

    def items_loader():
        return load_items(
            benchmark,
            [language.code for language in languages],
            source=item_source,
            limit_per_lang=limit_per_lang,
            options=recipe.get("benchmarks", {}).get(benchmark, {}),
            **benchmark_arguments(benchmark),
        )

    console = Console()
    if dry_run:
        print_plan(console, benchmark, languages, items_loader(), recipe)
        return

    progress = RichProgress()
    wiki_source, source_info = open_source(
        kind,
        recipe,
        dump_paths=dump or [],
        endpoint=endpoint,
        cache_dir=cache_dir or out / "cache",
        languages=languages,
        progress=progress,
    )
    job = CorpusJob(
        benchmark=benchmark,
        languages=languages,
        recipe=recipe,
        source=wiki_source,
        source_info=source_info,
        run=run,
        load_items=items_loader,
        workers=workers or default_workers(kind, recipe, languages),
    )
    try:
        result = build_corpus(job, progress)
    finally:
        wiki_source.close()
    print_summary(console, result)
    if result.failures["search"] or result.failures["fetch"]:
        raise typer.Exit(code=1)


def benchmark_arguments(benchmark: str) -> dict:
    """CVQA rows name their language-country subset; the registry maps each to its code."""
    if benchmark != "cvqa":
        return {}
    registry = load_languages()
    return {"subset_codes": {tuple(lang.cvqa_subset): lang.code for lang in registry.all("cvqa") if lang.cvqa_subset}}


def default_workers(kind: str, recipe: dict, languages: list[Language]) -> int:
    """Live runs: the per-wiki limit times the wikis in play; local runs: one per core."""
    if kind == "api":
        wikis = {language.dbname for language in languages} | {"enwiki"}
        return min(32, int(recipe["concurrency_per_wiki"]) * len(wikis))
    return max(1, os.cpu_count() or 1)


def print_plan(console: Console, benchmark: str, languages: list[Language], items: list, recipe: dict) -> None:
    queries = list(former_for(languages, recipe).run(items))
    keys = unique_keys(query.key for query in queries)
    table = Table(title=f"Plan for {benchmark} (dry run: nothing fetched)")
    table.add_column("wiki")
    table.add_column("queries", justify="right")
    table.add_column("unique queries", justify="right")
    per_wiki: dict[str, list[int]] = {}
    for query in queries:
        per_wiki.setdefault(query.wiki, [0, 0])[0] += 1
    for wiki, _text in keys:
        per_wiki[wiki][1] += 1
    for wiki in sorted(per_wiki):
        table.add_row(wiki, str(per_wiki[wiki][0]), str(per_wiki[wiki][1]))
    console.print(table)
    console.print(
        f"{len(items)} items in {len(languages)} languages -> {len(queries)} queries, "
        f"{len(keys)} searches of top {recipe['k']}."
    )


def print_summary(console: Console, result: CorpusResult) -> None:
    state = "resumed and finished" if result.resumed else "finished"
    table = Table(title=f"Corpus {state}: {result.root}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for name, value in result.counts.items():
        table.add_row(name.replace("_", " "), str(value))
    for name, value in result.requests.items():
        table.add_row(f"source: {name}", str(value))
    for name, value in result.failures.items():
        table.add_row(f"failed: {name}", f"[red]{value}[/]" if value else "0")
    console.print(table)
    configs = ", ".join(f"{name} ({rows})" for name, rows in result.configs.items())
    console.print(f"configs: {configs}")
    console.print(f'load with: datasets.load_dataset("{result.root}", "default")')
