"""``m4build eval score``: score predictions made elsewhere, in each benchmark's own file format.

Thin commands: read the inputs, hand them to :mod:`m4build.eval.scoring`, write the JSON report
atomically and print a table. The scoring modules are imported inside the commands, so that
``m4build --help`` does not pay for loading every metric.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from m4build.runs import atomic_write_json

if TYPE_CHECKING:
    from m4build.eval.scoring import ChoiceReport, RetrievalReport

score_app = typer.Typer(
    name="score",
    help="Score predictions made elsewhere: WorldCuisines, CVQA and RAVENEA files in their own formats.",
    no_args_is_help=True,
)

JSON_OUT = typer.Option(..., "--json", help="Where to write the JSON report (written atomically).")
PREDICTIONS = typer.Option(
    ..., "--predictions", "-p", help="A prediction file, or a folder of them; repeat the flag for more."
)
MODE = typer.Option(
    "default",
    "--mode",
    help="default (corrected answer parsing) or parity (the reference scorer's behaviour).",
)
VQA = typer.Option(
    None,
    "--vqa",
    help="VQA rows: hf_prompt JSONL files or folders, parquet/CSV files, or a Hub dataset id "
    "(default: worldcuisines/vqa-v1.1). Repeat the flag for more.",
)
VQA_CONFIG = typer.Option(
    None, "--vqa-config", help="With a Hub id: the configs to load (default: task1 and task2)."
)
VQA_SPLIT = typer.Option(
    None,
    "--vqa-split",
    help="With a Hub id: the split (default: test_small for *_pred_small.jsonl files, else test_large).",
)
MODEL = typer.Option(None, "--model", help="The model's name, when the file names do not say it.")
CVQA = typer.Option(
    None,
    "--cvqa",
    help="CVQA rows with labels: JSONL/parquet/CSV files or folders, or a Hub dataset id "
    "(default: davidanugraha/cvqa, the labelled copy M4-RAG scores against).",
)
CVQA_SPLIT = typer.Option("test", "--cvqa-split", help="With a Hub id: the split.")
RUN = typer.Option(..., "--run", help="A TREC run file: query Q0 document rank score tag.")
QRELS = typer.Option(
    ..., "--qrels", help="Graded judgments: RAVENEA metadata JSONL or TREC qrels (told apart by content)."
)
RETRIEVAL_MODE = typer.Option(
    "default", "--mode", help="default (corrected metrics), parity (RAVENEA's gdeval.py) or both."
)
RUN_QUERIES_ONLY = typer.Option(
    False,
    "--run-queries-only",
    help="Score the queries the run ranks (e.g. one split) instead of every judged query.",
)


@score_app.command("worldcuisines", no_args_is_help=True)
def worldcuisines_command(
    predictions: list[Path] = PREDICTIONS,
    vqa: list[str] = VQA,
    vqa_config: list[str] = VQA_CONFIG,
    vqa_split: str = VQA_SPLIT,
    json_out: Path = JSON_OUT,
    mode: str = MODE,
    model: str = MODEL,
) -> None:
    """Score WorldCuisines multiple-choice predictions (the repository's task*_mc_*_pred*.jsonl files).

    Example: m4build eval score worldcuisines -p result/task1_mc_mymodel_pred_small.jsonl
    -p result/task2_mc_mymodel_pred_small.jsonl --vqa hf_prompt/ --json scores/mymodel.json
    """
    from m4build.eval.scoring import worldcuisines as wc
    from m4build.eval.scoring.inputs import checked_mode, is_hub_id

    mode = checked_mode(mode)
    predicted = wc.read_predictions(predictions, model=model)
    sources = vqa or [wc.VQA_DATASET]
    configs = vqa_config or list(wc.VQA_CONFIGS)
    split = vqa_split or predicted.split or wc.LARGE_SPLIT
    prompts = wc.read_vqa(sources, configs=configs, split=split)
    hub_used = any(is_hub_id(source) for source in sources)
    report = wc.score_worldcuisines(
        predicted,
        prompts,
        mode=mode,
        inputs={"vqa": list(sources), **({"vqa_configs": configs, "vqa_split": split} if hub_used else {})},
    )
    finish_choice_report(Console(), report, json_out, title_suffix=predicted.model)


@score_app.command("cvqa", no_args_is_help=True)
def cvqa_command(
    predictions: list[Path] = PREDICTIONS,
    cvqa: list[str] = CVQA,
    cvqa_split: str = CVQA_SPLIT,
    json_out: Path = JSON_OUT,
    mode: str = MODE,
) -> None:
    """Score CVQA multiple-choice predictions in M4-RAG's format ({ID}-en / {ID}-local with a response).

    Example: m4build eval score cvqa -p responses.jsonl --cvqa cvqa_labelled.parquet --json cvqa.json
    """
    from m4build.eval.scoring import cvqa as scoring
    from m4build.eval.scoring.inputs import checked_mode

    mode = checked_mode(mode)
    predicted = scoring.read_predictions(predictions)
    sources = cvqa or [scoring.CVQA_DATASET]
    rows = scoring.read_rows(sources, split=cvqa_split)
    report = scoring.score_cvqa(predicted, rows, mode=mode, inputs={"cvqa": list(sources)})
    console = Console()
    finish_choice_report(console, report, json_out)
    if report.details["missing"]:
        how = "scored as wrong (parity)" if report.details["missing_scored_as_wrong"] else "not scored"
        console.print(f"{report.details['missing']} CVQA question(s) have no prediction: {how}.")


@score_app.command("ravenea", no_args_is_help=True)
def ravenea_command(
    run: Path = RUN,
    qrels: Path = QRELS,
    json_out: Path = JSON_OUT,
    mode: str = RETRIEVAL_MODE,
    run_queries_only: bool = RUN_QUERIES_ONLY,
) -> None:
    """Score a RAVENEA retrieval run: MRR, P@1/3/5 and nDCG@1/3/5.

    Example: m4build eval score ravenea --run bm25.trec --qrels metadata.jsonl --mode both --json bm25.json
    """
    from m4build.eval.scoring.ravenea import score_ravenea

    report = score_ravenea(run, qrels, mode=mode, run_queries_only=run_queries_only)
    atomic_write_json(json_out, report.as_dict())
    console = Console()
    console.print(retrieval_table(report))
    console.print(f"report written to {escape(str(json_out))}")


# --- printing ------------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f}"


def finish_choice_report(
    console: Console, report: ChoiceReport, json_out: Path, title_suffix: str | None = None
) -> None:
    atomic_write_json(json_out, report.as_dict())
    console.print(choice_table(report, title_suffix))
    console.print(
        f"macro {percent(report.accuracy.macro)}  micro {percent(report.accuracy.micro)}  "
        f"n {report.accuracy.n}  unparsable {report.accuracy.unparsable}  mode {report.mode}"
    )
    console.print(f"report written to {escape(str(json_out))}")


def choice_table(report: ChoiceReport, title_suffix: str | None = None) -> Table:
    """Accuracy (%) with one row per language and one column per prompt type, the averages last."""
    accuracy = report.accuracy
    prompt_types = report.prompt_types()
    title = f"{report.benchmark} accuracy (%), mode {report.mode}"
    table = Table(title=escape(f"{title}: {title_suffix}" if title_suffix else title))
    table.add_column(report.language_label)
    for prompt_type in prompt_types:
        table.add_column(escape(report.prompt_type_label(prompt_type)), justify="right")
    for language in accuracy.by_language:
        cells = [
            accuracy.by_prompt_type_and_language[prompt_type].get(language) for prompt_type in prompt_types
        ]
        table.add_row(escape(language), *(percent(cell.accuracy) if cell else "-" for cell in cells))
    table.add_section()
    table.add_row("average", *(percent(accuracy.macro_by_prompt_type[key]) for key in prompt_types))
    return table


def retrieval_table(report: RetrievalReport) -> Table:
    """One row per mode, RAVENEA's columns (in %, as its gdeval.py prints them) and the query count."""
    table = Table(title="RAVENEA retrieval (%)")
    first = next(iter(report.scores.values()))
    names = ["MRR", *(f"P@{k}" for k in first.depths), *(f"nDCG@{k}" for k in first.depths)]
    table.add_column("mode")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("queries", justify="right")
    for mode, scores in report.scores.items():
        values = [scores.mrr, *scores.precision.values(), *scores.ndcg.values()]
        table.add_row(mode, *(percent(value) for value in values), str(scores.queries))
    return table
