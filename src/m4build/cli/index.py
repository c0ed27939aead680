"""``m4build index`` (passages, dense and BM25 shards for a corpus run) and ``m4build search``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from m4build.cli.options import comma_list
from m4build.errors import UsageError
from m4build.hub.load import load_index
from m4build.progress import RichProgress
from m4build.recipes import load_recipe
from m4build.retrieval.build import IndexJob, IndexResult, build_index
from m4build.retrieval.searcher import MODES, Hit

SNIPPET_CHARS = 120



def index_command(
    run: Path = typer.Argument(..., help="A corpus run folder (the --out of m4build corpus)."),
    model: str = typer.Option(
        None, "--model", "-m", help="Embedding model: Hub id or local path (default: the recipe's)."
    ),
    recipe_path: Path = typer.Option(
        None, "--recipe", help="A recipe YAML to start from (default builders/index.yaml)."
    ),
    lang: str = typer.Option(
        None, "--lang", "-l", help="Corpus languages to index, comma-separated (default: all)."
    ),
    no_dense: bool = typer.Option(False, "--no-dense", help="Skip the dense (FAISS) shards."),
    no_bm25: bool = typer.Option(False, "--no-bm25", help="Skip the BM25 shards."),
    batch_size: int = typer.Option(
        None, "--batch-size", min=1, help="Passages per forward pass of the model."
    ),
) -> None:
    """Chunk a corpus run into passages and build dense and BM25 index shards per language.

    Example: m4build index runs/wc-sample --model intfloat/multilingual-e5-large --lang en,zh
    """
    recipe = load_recipe("index", recipe_path)
    if model is not None:
        recipe["dense"]["model"] = model
    if batch_size is not None:
        recipe["dense"]["batch_size"] = batch_size
    job = IndexJob(run=run, recipe=recipe, languages=comma_list(lang), dense=not no_dense, bm25=not no_bm25)
    result = build_index(job, RichProgress())
    print_index_summary(Console(), result)


def print_index_summary(console: Console, result: IndexResult) -> None:
    manifest = result.manifest
    table = Table(title=f"Index finished: {result.root}/indexes")
    table.add_column("language")
    table.add_column("passages", justify="right")
    table.add_column("dense", justify="right")
    table.add_column("bm25")
    for lang, entry in sorted(manifest["languages"].items()):
        dense = [item for item in entry["files"] if item["kind"] == "dense"]
        has_bm25 = any(item["kind"] == "bm25" for item in entry["files"])
        vectors = f"{dense[0]['vectors']} ({dense[0]['index_type']})" if dense else "-"
        table.add_row(lang, str(entry["passages"]), vectors, "yes" if has_bm25 else "-")
    console.print(table)
    if manifest["dense"]:
        dense = manifest["dense"]
        console.print(
            f"model: {dense['model']} ({dense['family']}), query prefix {dense['query_prefix']!r}, "
            f"passage prefix {dense['passage_prefix']!r}, normalize={dense['normalize']}"
        )
    for step, languages in sorted(result.reused.items()):
        console.print(f"already finished ({step}): {', '.join(languages)}")
    console.print(
        f'search with: m4build search {result.root} --lang {next(iter(sorted(manifest["languages"])), "en")} "query"'
    )


def search_command(
    index: str = typer.Argument(
        ..., help="An index folder: a run folder after m4build index, or a pushed folder."
    ),
    queries: list[str] = typer.Argument(..., help="One or more queries."),
    lang: str = typer.Option(..., "--lang", "-l", help="The language shard to search."),
    k: int = typer.Option(5, "--k", min=1, help="Hits per query (the paper: 5)."),
    mode: str = typer.Option(
        None, "--mode", help=f"{', '.join(MODES)} (default: hybrid when both sides exist)."
    ),
    model: str = typer.Option(
        None, "--model", "-m", help="Query model (default: the one the index was built with)."
    ),
    revision: str = typer.Option(None, "--revision", help="With a Hub repo id: the branch, tag or commit."),
) -> None:
    """Search an index (run folder, pushed folder or Hub repo id) and print the top passages per query.

    Example: m4build search runs/wc-sample --lang en --k 5 "Russian nesting doll"
    """
    if mode is not None and mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", f"Valid modes: {', '.join(MODES)}.")
    searcher = load_index(index, lang, model=model, revision=revision)
    console = Console()
    for query, hits in zip(queries, searcher.search(queries, k=k, mode=mode)):
        console.print(hits_table(query, mode or searcher.default_mode, hits))


def hits_table(query: str, mode: str, hits: list[Hit]) -> Table:
    table = Table(title=escape(f"{query}  [{mode}]"), show_lines=False)
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("title", max_width=24)
    table.add_column("text")
    for hit in hits:
        snippet = " ".join(hit.text.split())
        snippet = snippet if len(snippet) <= SNIPPET_CHARS else snippet[: SNIPPET_CHARS - 1] + "…"
        where = " > ".join([hit.title, *hit.section_path])
        table.add_row(str(hit.rank), f"{hit.score:.4f}", hit.id, escape(where), escape(snippet))
    return table
