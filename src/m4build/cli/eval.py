"""``m4build eval``: baseline evaluations on what m4build published, and scoring of outside runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from m4build.cli import model_options as flags
from m4build.cli.eval_score import score_app
from m4build.cli.options import comma_list
from m4build.errors import UsageError
from m4build.eval.m4rag.images import ImageStore
from m4build.hub.load import corpus_manifest
from m4build.eval.m4rag.items import load_eval_items
from m4build.eval.m4rag.run import EvalJob, EvalModels, run_evaluation, write_outputs
from m4build.eval.m4rag.settings import SETTINGS, parse_settings
from m4build.languages import load_languages
from m4build.llm.config import ModelConfig
from m4build.llm.costs import Budget
from m4build.llm.model import LanguageModel
from m4build.progress import RichProgress
from m4build.recipes import load_recipe
from m4build.sources.benchmarks import BENCHMARKS
from m4build.sources.wikipedia.politeness import build_user_agent

eval_app = typer.Typer(name="eval", help="Evaluate models on published benchmarks, or score outside runs.", no_args_is_help=True)
eval_app.add_typer(score_app, name="score")


@eval_app.command("m4rag", no_args_is_help=True)
def m4rag_command(
    dataset: str = typer.Option(..., "--dataset", "-d", help=f"The VQA benchmark: {', '.join(BENCHMARKS)}."),
    setting: str = typer.Option(None, "--setting", help=f"Comma-separated settings (default all): {', '.join(SETTINGS)}."),
    corpus: str = typer.Option(None, "--corpus", help="Index for retrieval: a corpus run folder after `m4build index`, a pushed folder, or a Hub repo id."),
    out: Path = typer.Option(..., "--out", "-o", help="Evaluation folder (created, or resumed if it exists)."),
    lang: str = typer.Option("all", "--lang", "-l", help="'all', or benchmark language codes, comma-separated."),
    items: str = typer.Option("sample", "--items", help="Benchmark rows: 'hub', 'sample', or local files (comma-separated)."),
    limit_per_lang: int = typer.Option(None, "--limit-per-lang", min=1, help="Evaluate only the first N items per language."),
    images: Path = typer.Option(None, "--images", help="Folder of the benchmark's images, named as in the image URLs."),
    contact: str = typer.Option(None, "--contact", help="Email or URL for the User-Agent of image downloads (or M4BUILD_CONTACT)."),
    k: int = typer.Option(None, "--k", min=1, max=50, help="Passages per item in the retrieval settings (paper: 5)."),
    retrieval_mode: str = typer.Option(None, "--retrieval-mode", help="dense (default), bm25 or hybrid."),
    mm_encoder: str = typer.Option(None, "--mm-encoder", help="CLIP-style encoder for mm-rag (Hub id or local path)."),
    parse_mode: str = typer.Option(None, "--parse-mode", help="Answer parsing: default, or parity (WorldCuisines scorer)."),
    recipe_path: Path = typer.Option(None, "--recipe", help="An evaluation recipe (default builders/eval_m4rag.yaml)."),
    provider: str = flags.PROVIDER,
    model: str = flags.MODEL,
    base_url: str = flags.BASE_URL,
    aux_provider: str = typer.Option(None, "--aux-provider", help="Provider of the captioning/translation model (default: --provider)."),
    aux_model: str = typer.Option(None, "--aux-model", help="Model for captions, oracle captions and translations (default: --model)."),
    aux_base_url: str = typer.Option(None, "--aux-base-url", help="Server of the auxiliary model."),
    judge_provider: str = typer.Option(None, "--judge-provider", help="Provider of the judge (default: --provider)."),
    judge_model: str = typer.Option(None, "--judge-model", help="VLM-as-judge for the relevance of given contexts (off by default)."),
    judge_base_url: str = typer.Option(None, "--judge-base-url", help="Server of the judge model."),
    temperature: float = flags.TEMPERATURE,
    max_tokens: int = flags.MAX_TOKENS,
    concurrency: int = flags.CONCURRENCY,
    rpm: float = flags.RPM,
    tpm: float = flags.TPM,
    max_retries: int = flags.MAX_RETRIES,
    max_cost: float = flags.MAX_COST,
    price_in: float = flags.PRICE_IN,
    price_out: float = flags.PRICE_OUT,
    llm_cache: Path = flags.LLM_CACHE,
) -> None:
    """Evaluate a VLM in the M4-RAG settings, from a published corpus and its indexes.

    Example: m4build eval m4rag --dataset worldcuisines --setting no-rag,oracle,text-rag-oracle-query
    --corpus runs/wc-sample --images images/ --provider openai-compatible --base-url http://localhost:8000/v1
    --model Qwen/Qwen2.5-VL-7B-Instruct --out runs/eval-wc
    """
    if dataset not in BENCHMARKS:
        raise UsageError(f"Unknown dataset {dataset!r}.", f"Valid datasets: {', '.join(BENCHMARKS)}.")
    recipe = load_recipe("eval_m4rag", recipe_path)
    settings = parse_settings(comma_list(setting) or list(recipe["settings"]))
    mode = parse_mode or recipe["parse_mode"]
    if mode not in ("default", "parity"):
        raise UsageError(f"Unknown parse mode {mode!r}.", "Use default or parity.")
    needs_index = any(s.context == "retrieved" and s.query != "multimodal" for s in settings)
    needs_mm = any(s.query == "multimodal" for s in settings)
    if (needs_index or needs_mm) and not corpus:
        raise UsageError(
            "The retrieval settings need the published corpus and its indexes.",
            "Pass --corpus with a corpus run folder after `m4build index`, a pushed folder, or org/name.",
        )
    if corpus:
        check_corpus_dataset(corpus, dataset)
    shared = {
        "temperature": temperature,
        "max_tokens": max_tokens,
        "concurrency": concurrency,
        "requests_per_minute": rpm,
        "tokens_per_minute": tpm,
        "max_retries": max_retries,
        "price_in": price_in,
        "price_out": price_out,
    }
    inference = flags.model_config(recipe.get("model"), provider=provider, model=model, base_url=base_url, **shared)
    auxiliary = _companion(inference, recipe.get("auxiliary_model"), aux_provider, aux_model, aux_base_url)
    judge = (
        _companion(inference, recipe.get("judge_model"), judge_provider, judge_model, judge_base_url)
        if judge_model or (recipe.get("judge_model") or {}).get("model")
        else None
    )
    cache = flags.open_cache(llm_cache)
    budget = Budget(max_cost)
    models = EvalModels(
        inference=LanguageModel.open(inference, cache=cache, budget=budget),
        auxiliary=LanguageModel.open(auxiliary, cache=cache, budget=budget) if auxiliary != inference else None,
        judge=LanguageModel.open(judge, cache=cache, budget=budget) if judge else None,
    )
    if models.auxiliary is None:
        models.auxiliary = models.inference
    languages = [language.code for language in load_languages().resolve(dataset, lang)]
    eval_items = load_eval_items(dataset, languages, source=items, limit_per_lang=limit_per_lang)
    if not eval_items:
        raise UsageError(f"No {dataset} items for --lang {lang} in --items {items}.", "Check the language codes and the item source.")
    user_agent = build_user_agent(contact) if contact else None
    job = EvalJob(
        dataset=dataset,
        settings=settings,
        items=eval_items,
        models=models,
        images=ImageStore(out / "images", folder=images, user_agent=user_agent),
        out=out,
        index=corpus,
        k=k or int(recipe["k"]),
        retrieval_mode=retrieval_mode or recipe["retrieval_mode"],
        multimodal=_multimodal(corpus, mm_encoder or recipe["multimodal_encoder"], k or int(recipe["k"])) if needs_mm else None,
    )
    progress = RichProgress()
    runs = run_evaluation(job, progress)
    scores = write_outputs(job, runs, mode=mode)
    print_summary(Console(), scores, out)


def check_corpus_dataset(corpus: str, dataset: str) -> None:
    """Refuse a corpus built for the other benchmark: its passages were retrieved for other items."""
    manifest = corpus_manifest(corpus) or {}
    built_for = manifest.get("settings", {}).get("benchmark")
    if built_for and built_for != dataset:
        raise UsageError(
            f"The corpus {corpus} was built for {built_for}, not {dataset}.",
            f"Pass the {dataset} corpus (m4build corpus {dataset} ...), or --dataset {built_for}.",
        )


def _companion(
    inference: ModelConfig, recipe_part: dict[str, Any] | None, provider: str | None, model: str | None, base_url: str | None
) -> ModelConfig:
    """A helper model's config: its own flags and recipe entries over the model under test's."""
    settings = inference.describe()
    settings.update({key: value for key, value in (recipe_part or {}).items() if value is not None})
    if provider and provider != inference.provider and not base_url:
        settings["base_url"] = None
    for name, value in (("provider", provider), ("model", model), ("base_url", base_url)):
        if value:
            settings[name] = value
    return ModelConfig.from_mapping(settings)


def _multimodal(corpus: str | None, encoder: str, k: int) -> Any:
    """Imported here: torch and transformers load only when mm-rag is asked for."""
    from m4build.eval.m4rag.multimodal import open_multimodal_retriever

    return open_multimodal_retriever(corpus, encoder, k=k)


def print_summary(console: Console, scores: dict[str, Any], out: Path) -> None:
    table = Table(title=f"M4-RAG evaluation: {scores['header']['dataset']} — {scores['header']['model']}")
    for column in ("setting", "answered", "macro", "micro", "unparsable", "failed", "retention", "correction"):
        table.add_column(column, justify="left" if column == "setting" else "right")
    for name, entry in scores["settings"].items():
        accuracy = entry.get("accuracy", {})
        effect = scores.get("rag_effect", {}).get(name, {})
        table.add_row(
            name,
            str(accuracy.get("n", 0)),
            _percent(accuracy.get("macro")),
            _percent(accuracy.get("micro")),
            str(accuracy.get("unparsable", 0)),
            f"[red]{entry['failed']}[/]" if entry["failed"] else "0",
            _percent(effect.get("retention")),
            _percent(effect.get("correction")),
        )
    console.print(table)
    console.print(f"predictions: {out / 'predictions.parquet'}\nscores: {out / 'scores.json'}\nreport: {out / 'report.md'}")


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


@eval_app.command("ravenea", no_args_is_help=True)
def ravenea_command(
    run: Path = typer.Argument(..., help="A RAVENEA build folder with imported annotations."),
    retriever: str = typer.Option("bm25", "--retriever", help="bm25, dense, or a model id/path (sentence-transformers or CLIP-style)."),
    out: Path = typer.Option(None, "--out", "-o", help="Where run.trec and scores.json go (default RUN/eval/RETRIEVER)."),
    tasks: str = typer.Option(None, "--downstream", help="Also run downstream tasks with a VLM: cvqa, cic (comma-separated)."),
    recipe_path: Path = typer.Option(None, "--recipe", help="A RAVENEA recipe (default builders/ravenea.yaml)."),
    provider: str = flags.PROVIDER,
    model: str = flags.MODEL,
    base_url: str = flags.BASE_URL,
    max_cost: float = flags.MAX_COST,
    llm_cache: Path = flags.LLM_CACHE,
) -> None:
    """Score a retriever on RAVENEA's graded candidates (MRR, P@k, nDCG@k, official and corrected).

    Example: m4build eval ravenea runs/ravenea --retriever bm25
    """
    from m4build.eval.ravenea.run import evaluate_ravenea

    recipe = load_recipe("ravenea", recipe_path)
    chosen = comma_list(tasks) or []
    unknown = sorted(set(chosen) - {"cvqa", "cic"})
    if unknown:
        raise UsageError(f"Unknown downstream task(s): {', '.join(unknown)}.", "Valid tasks: cvqa, cic.")
    language_model = None
    if chosen:
        config = flags.model_config(recipe.get("model"), provider=provider, model=model, base_url=base_url)
        language_model = LanguageModel.open(config, cache=flags.open_cache(llm_cache), max_cost_usd=max_cost)
    slug = retriever.strip("/").replace("/", "--")
    scores = evaluate_ravenea(
        run,
        out or run / "eval" / slug,
        retriever=retriever,
        dense_model=recipe["eval"]["dense_model"],
        tasks=chosen,
        model=language_model,
    )
    print_ravenea(Console(), scores, out or run / "eval" / slug)


def print_ravenea(console: Console, scores: dict[str, Any], out: Path) -> None:
    metrics = ("MRR", "P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5")
    table = Table(title=f"RAVENEA retrieval: {scores['retriever']['retriever']} ({scores['queries']} images, %)")
    table.add_column("mode")
    for name in metrics:
        table.add_column(name, justify="right")
    for mode, values in scores["retrieval"].items():
        table.add_row(mode, *(_percent(values[name]) for name in metrics))
    console.print(table)
    for task, results in scores.get("downstream", {}).items():
        for variant, result in results.items():
            headline = result.get("accuracy", result.get("region_score", {}).get("score"))
            console.print(f"{task} {variant.replace('_', ' ')}: {_percent(headline)} ({result['items']} images)")
    console.print(f"run: {out / 'run.trec'}\nscores: {out / 'scores.json'}")
