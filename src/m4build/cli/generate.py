"""``m4build generate``: fill a prompt template from a JSONL file and collect validated answers."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from m4build.cli import model_options as flags
from m4build.errors import InputFileError
from m4build.llm.model import LanguageModel
from m4build.llm.prompts import load_prompt
from m4build.llm.structured import OutputSchema
from m4build.pipelines.generate.rows import read_rows
from m4build.pipelines.generate.run import OUTPUT_FILE, GenerateJob, GenerateResult, run_generation
from m4build.progress import RichProgress
from m4build.runs import RunFolder


def generate_command(
    prompt_name: str = typer.Argument(..., metavar="PROMPT", help="A prompt under builders/prompts, e.g. m4rag/translate."),
    input_path: Path = typer.Option(..., "--input", "-i", help="JSONL rows: the prompt's variables, optional id and images."),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder (created, or resumed if it exists)."),
    schema_path: Path = typer.Option(None, "--schema", help="A JSON schema every answer must match."),
    prompts_dir: Path = typer.Option(None, "--prompts-dir", help="Read prompts from this folder instead of builders/prompts."),
    provider: str = flags.PROVIDER,
    model: str = flags.MODEL,
    base_url: str = flags.BASE_URL,
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
    """Run one prompt over every row of a JSONL file, with caching, retries and a cost limit.

    Example: m4build generate m4rag/translate --input rows.jsonl --out runs/translate
    --provider openai-compatible --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
    """
    config = flags.model_config(
        None,
        provider=provider,
        model=model,
        base_url=base_url,
        temperature=temperature,
        max_tokens=max_tokens,
        concurrency=concurrency,
        requests_per_minute=rpm,
        tokens_per_minute=tpm,
        max_retries=max_retries,
        price_in=price_in,
        price_out=price_out,
    )
    prompt = load_prompt(prompt_name, root=prompts_dir)
    rows = read_rows(input_path, prompt)
    schema = OutputSchema.of(_read_schema(schema_path)) if schema_path else None
    language_model = LanguageModel.open(config, cache=flags.open_cache(llm_cache), max_cost_usd=max_cost)
    job = GenerateJob(prompt, rows, language_model, RunFolder(out), input_path, schema)
    result = run_generation(job, RichProgress())
    print_summary(Console(), result)
    if result.failures:
        raise typer.Exit(code=1)


def _read_schema(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InputFileError(f"Cannot read schema {path}: {error.strerror}.", "Check the --schema path.")
    except json.JSONDecodeError as error:
        raise InputFileError(f"{path}, line {error.lineno}: not valid JSON ({error.msg}).", "Fix the schema file.")


def print_summary(console: Console, result: GenerateResult) -> None:
    state = "resumed and finished" if result.resumed else "finished"
    table = Table(title=f"Generation {state}: {result.root}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for name, value in result.counts.items():
        table.add_row(name, str(value))
    for model, usage in result.usage["models"].items():
        table.add_row(f"{model}: requests / cache hits", f"{usage['requests']} / {usage['cache_hits']}")
        table.add_row(f"{model}: tokens in / out", f"{usage['input_tokens']} / {usage['output_tokens']}")
        table.add_row(f"{model}: cost this run (USD)", f"{usage['cost_usd']:.4f}")
    console.print(table)
    for failure in result.failures[:5]:
        console.print(f"[red]failed[/] {failure['id']}: {failure['error']}", highlight=False)
    console.print(f"answers: {result.root / 'data' / OUTPUT_FILE}")
