"""``m4build build``: benchmark builders beyond the M4-RAG corpus (RAVENEA so far)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from m4build.cli import model_options as flags
from m4build.errors import UsageError
from m4build.languages import load_languages
from m4build.llm.model import LanguageModel
from m4build.pipelines.ravenea.build import RaveneaJob, RaveneaResult, build_ravenea
from m4build.pipelines.ravenea.inputs import ImageInstance, cvqa_instances, read_image_folder
from m4build.progress import RichProgress
from m4build.recipes import load_recipe, with_overrides
from m4build.runs import RunFolder
from m4build.sources.wikipedia.factory import open_source

build_app = typer.Typer(name="build", help="Build a benchmark dataset from its sources.", no_args_is_help=True)
SOURCES = ("dump", "sample")


@build_app.command("ravenea", no_args_is_help=True)
def ravenea_command(
    dump: list[Path] = typer.Argument(None, help="English Wikipedia snapshot files (Enterprise HTML dump or parquet of articles)."),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder (created, or resumed if it exists)."),
    images: Path = typer.Option(None, "--images", help="A folder of images (CCUB or your own), described by --metadata."),
    metadata: Path = typer.Option(None, "--metadata", help="CSV or JSONL: file_name, country, category [, task_type, question, options, answer, human_captions]."),
    cvqa: str = typer.Option(None, "--cvqa", help="Also take CVQA images: 'hub', 'sample', or local files."),
    cvqa_lang: str = typer.Option("all", "--cvqa-lang", help="CVQA subsets to take ('all' or codes, comma-separated)."),
    source: str = typer.Option(None, "--source", "-s", help="Where candidate articles come from: dump (files given) or sample."),
    k: int = typer.Option(None, "--k", min=1, max=100, help="BM25 candidates per caption (paper: 10)."),
    seed: int = typer.Option(None, "--seed", help="Seed of the annotation-order shuffle and the splits."),
    recipe_path: Path = typer.Option(None, "--recipe", help="A recipe (default builders/ravenea.yaml)."),
    provider: str = flags.PROVIDER,
    model: str = flags.MODEL,
    base_url: str = flags.BASE_URL,
    concurrency: int = flags.CONCURRENCY,
    max_cost: float = flags.MAX_COST,
    price_in: float = flags.PRICE_IN,
    price_out: float = flags.PRICE_OUT,
    llm_cache: Path = flags.LLM_CACHE,
) -> None:
    """Build a RAVENEA-style dataset: cultural captions, BM25 candidates, splits, ready to annotate.

    Example: m4build build ravenea --images imgs/ --metadata imgs/metadata.csv --source sample
    --provider openai --model gpt-4o --out runs/ravenea
    """
    recipe = with_overrides(load_recipe("ravenea", recipe_path), {"k": k, "seed": seed, "source": source})
    kind = recipe["source"]
    if kind not in SOURCES:
        raise UsageError(f"Unknown source {kind!r}.", f"Valid sources: {', '.join(SOURCES)}.")
    if kind == "dump" and not dump:
        raise UsageError("--source dump needs the snapshot files.", "Example: m4build build ravenea enwiki.ndjson.gz --out RUN ...")
    if (images is None) != (metadata is None):
        raise UsageError("--images and --metadata go together.", "Give the image folder and the file that describes it.")
    instances: list[ImageInstance] = []
    source_datasets: list[str] = []
    if images is not None and metadata is not None:
        instances += read_image_folder(images, metadata)
    if cvqa:
        codes = [language.code for language in load_languages().resolve("cvqa", cvqa_lang)]
        instances += cvqa_instances(cvqa, codes)
        source_datasets.append("afaji/cvqa")
    if not instances:
        raise UsageError("No images to build from.", "Pass --images DIR --metadata FILE, or --cvqa hub.")
    config = flags.model_config(
        recipe.get("model"),
        provider=provider,
        model=model,
        base_url=base_url,
        concurrency=concurrency,
        price_in=price_in,
        price_out=price_out,
    )
    language_model = LanguageModel.open(config, cache=flags.open_cache(llm_cache), max_cost_usd=max_cost)
    progress = RichProgress()
    wiki_source, source_info = open_source(kind, recipe, dump_paths=dump or [], cache_dir=out / "cache", progress=progress)
    try:
        job = RaveneaJob(RunFolder(out), instances, language_model, wiki_source, source_info, recipe, source_datasets)
        result = build_ravenea(job, progress)
    finally:
        wiki_source.close()
    print_summary(Console(), result)
    if result.caption_failures or any(d.reason == "undecodable" for d in result.dropped):
        raise typer.Exit(code=1)  # duplicates are dropped by design; unreadable images and failed captions are not


def print_summary(console: Console, result: RaveneaResult) -> None:
    table = Table(title=f"RAVENEA build {'resumed and finished' if result.resumed else 'finished'}: {result.root}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for name, value in result.counts.items():
        table.add_row(name.replace("_", " "), str(value))
    console.print(table)
    for dropped in result.dropped[:5]:
        console.print(f"[yellow]dropped[/] {dropped.file_name}: {dropped.reason} ({dropped.detail})", highlight=False)
    for caption in result.caption_failures[:5]:
        console.print(f"[red]no caption[/] {caption.file_name}: {caption.error}", highlight=False)
    configs = ", ".join(sorted({f"{c.name}/{c.split} ({c.rows})" for c in result.configs}))
    console.print(f"configs: {configs}")
    console.print(f"next: m4build annotate export ravenea {result.root} --format label-studio")
