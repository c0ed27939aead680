"""``m4build annotate``: export annotation tasks and import the annotators' labels, per benchmark.

Thin commands: check the benchmark, call :mod:`m4build.annotation`, print a summary. An import that
had to refuse some files still writes what the good ones hold, prints the summary, and then exits
with the input-error code naming the refused files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from m4build.errors import InputFileError, UsageError

if TYPE_CHECKING:
    from m4build.annotation.ravenea import ImportReport

annotate_app = typer.Typer(
    name="annotate",
    help="Export annotation tasks (Label Studio or CSV) and import the labels annotators send back.",
    no_args_is_help=True,
)

BENCHMARKS = ("ravenea",)

BENCHMARK = typer.Argument(..., help="The benchmark whose run folder is annotated: ravenea.")
RUN = typer.Argument(..., help="The run folder written by `m4build build ravenea --out RUN`.")
FORMAT = typer.Option(..., "--format", "-f", help="label-studio or csv.")
OUT = typer.Option(None, "--out", help="Where to write (default: RUN/annotations/export/FORMAT).")
ANNOTATORS = typer.Option(
    1, "--annotators", help="Annotators per pair: Label Studio's overlap, or how many CSV sheets."
)
IMAGE_PREFIX = typer.Option(
    None,
    "--image-prefix",
    help="URL prefix put before each image file name (default: Label Studio local files, "
    "/data/local-files/?d=images/; CSV: the image's absolute path).",
)
FILES = typer.Argument(..., help="Label Studio JSON exports (.json) and filled sheets (.csv).")
SKIP_INVALID = typer.Option(
    False,
    "--skip-invalid",
    help="Import the valid records of files that also hold invalid ones (default: refuse such files).",
)


def _checked_benchmark(benchmark: str) -> str:
    if benchmark.lower() not in BENCHMARKS:
        raise UsageError(
            f"annotation is not available for {benchmark!r}", f"Choose one of: {', '.join(BENCHMARKS)}."
        )
    return benchmark.lower()


def _kappa(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


@annotate_app.command("export", no_args_is_help=True)
def export_command(
    benchmark: str = BENCHMARK,
    run: Path = RUN,
    format: str = FORMAT,
    out: Path = OUT,
    annotators: int = ANNOTATORS,
    image_prefix: str = IMAGE_PREFIX,
) -> None:
    """Write the (image, article) pairs as Label Studio tasks or CSV sheets, in annotation order.

    Example: m4build annotate export ravenea runs/ravenea --format label-studio --annotators 3
    """
    from m4build.annotation.ravenea import export_tasks

    _checked_benchmark(benchmark)
    target = out or run / "annotations" / "export" / format
    result = export_tasks(run, target, format=format, annotators=annotators, image_prefix=image_prefix)
    console = Console()
    console.print(
        f"Wrote {result.tasks} tasks ({result.images} images) for {result.annotators} annotator(s) "
        f"as {result.format} to {escape(str(result.out))}:",
        highlight=False,
    )
    for path in result.files:
        console.print(f"  {escape(str(path))}", highlight=False)
    if result.format == "label-studio" and image_prefix is None:
        root = escape(str(run.resolve()))
        console.print(
            "Serve the images: start Label Studio with LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED=true and "
            f"LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT={root}, add a Local Files source storage with "
            f"path {root}/images (import method: Tasks; Save without Sync), then import tasks.json. "
            "Export the results with Export > JSON.",
            highlight=False,
        )


@annotate_app.command("import", no_args_is_help=True)
def import_command(
    benchmark: str = BENCHMARK,
    run: Path = RUN,
    files: list[Path] = FILES,
    skip_invalid: bool = SKIP_INVALID,
) -> None:
    """Validate and import labels, resolve them into graded judgments and report agreement.

    Example: m4build annotate import ravenea runs/ravenea export.json alice.csv bob.csv
    """
    from m4build.annotation.ravenea import import_annotations
    from m4build.pipelines.ravenea.build import refresh_dataset

    _checked_benchmark(benchmark)
    report = import_annotations(run, files, skip_invalid=skip_invalid)
    console = Console()
    _print_files(console, report)
    if report.pairs:
        _print_agreement(console, report)
        annotations = run / "annotations"
        console.print(
            f"Judged pairs: {len(report.pairs)} ({report.ties} with a tie, resolved to cannot_determine); "
            f"answers: {report.labels} ({report.replaced} replaced by a later import, "
            f"{report.orphaned} for pairs no longer in the run).",
            highlight=False,
        )
        grades = "  ".join(f"{grade:+d}: {count}" for grade, count in report.grade_counts.items())
        console.print(f"culture_relevance: {grades}", highlight=False)
        console.print(
            f"Wrote {escape(str(annotations / 'judgments.parquet'))} and "
            f"{escape(str(annotations / 'agreement.json'))}.",
            highlight=False,
        )
        if (run / "manifest.json").is_file():  # a finished build: its dataset now carries the grades
            refresh_dataset(run)
            console.print(f"Dataset updated with the grades: datasets.load_dataset({str(run)!r}, 'default')", highlight=False)
    for warning in report.warnings:
        console.print(f"[bold yellow]warning:[/] {escape(warning)}", highlight=False)
    if report.failed:
        listed = "; ".join(f"{outcome.path} ({outcome.status})" for outcome in report.failed)
        raise InputFileError(
            f"{len(report.failed)} of {len(report.files)} file(s) not imported: {listed}",
            "Fix the records listed above and import those files again "
            "(or pass --skip-invalid to import their valid records); earlier imports are unchanged.",
        )


def _print_files(console: Console, report: ImportReport) -> None:
    table = Table(title="Annotation files", title_justify="left")
    for column in ("file", "status", "pair judgments", "invalid records"):
        table.add_column(column, justify="right" if column != "file" and column != "status" else "left")
    for outcome in report.files:
        invalid = str(sum(outcome.parsed.problems.counts.values())) if outcome.parsed else "-"
        table.add_row(escape(str(outcome.path)), outcome.status, str(outcome.judgments), invalid)
    console.print(table)
    for outcome in report.files:
        if outcome.error:
            console.print(f"[bold red]unreadable:[/] {escape(outcome.error)}", highlight=False)
        if outcome.parsed is None:
            continue
        problems = outcome.parsed.problems
        for kind in sorted(problems.counts):
            examples = "; ".join(problems.examples[kind])
            console.print(
                f"[bold red]{escape(str(outcome.path))}:[/] {problems.counts[kind]} {escape(kind)} "
                f"(e.g. {escape(examples)})",
                highlight=False,
            )
        for note, count in sorted(outcome.parsed.notes.items()):
            console.print(f"{escape(str(outcome.path))}: {count} {escape(note)}", highlight=False)


def _print_agreement(console: Console, report: ImportReport) -> None:
    overall = Table(title="Agreement (units judged by two or more annotators)", title_justify="left")
    for column in ("questions", "units", "Fleiss' kappa", "Krippendorff's alpha"):
        overall.add_column(column, justify="left" if column == "questions" else "right")
    for scope, result in report.agreement.items():
        overall.add_row(
            scope, str(result.pairable_units), _kappa(result.fleiss_kappa), _kappa(result.krippendorff_alpha)
        )
    console.print(overall)

    pairwise = Table(title="Cohen's kappa per annotator pair", title_justify="left")
    pairwise.add_column("first", overflow="fold")
    pairwise.add_column("second", overflow="fold")
    for column in ("shared", "same", *report.agreement):
        pairwise.add_column(column, justify="right", no_wrap=True)
    kappas = {
        scope: {(pair.first, pair.second): pair.kappa for pair in result.pairs}
        for scope, result in report.agreement.items()
    }
    for pair in report.agreement["all"].pairs:
        pairwise.add_row(
            escape(pair.first),
            escape(pair.second),
            str(pair.shared_units),
            str(pair.agreed_units),
            *(_kappa(kappas[scope].get((pair.first, pair.second))) for scope in report.agreement),
        )
    console.print(pairwise)
