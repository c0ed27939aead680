"""The ``m4build`` command: a Typer app with one module per command group.

Commands stay thin (parse flags, load the recipe, call a pipeline, print a summary); the work
lives in ``m4build.pipelines``. User mistakes surface as one message and a stable exit code,
never as a traceback.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from m4build import __version__
from m4build.cli.annotate import annotate_app
from m4build.cli.build import build_app
from m4build.cli.corpus import corpus_command
from m4build.cli.eval import eval_app
from m4build.cli.generate import generate_command
from m4build.cli.index import index_command, search_command
from m4build.cli.push import push_command
from m4build.errors import ExitCode, M4BuildError

try:  # Typer 0.2x vendors its own click; older Typer uses the click package
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - depends on the installed Typer
    from click import ClickException

app = typer.Typer(
    name="m4build",
    help="Build multilingual and multimodal RAG benchmarks and publish them as Hugging Face datasets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("corpus", no_args_is_help=True)(corpus_command)
app.command("push", no_args_is_help=True)(push_command)
app.command("index", no_args_is_help=True)(index_command)
app.command("search", no_args_is_help=True)(search_command)
app.command("generate", no_args_is_help=True)(generate_command)
app.add_typer(eval_app)
app.add_typer(build_app)
app.add_typer(annotate_app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"m4build {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """m4build: corpora, indexes and evaluations for M4-RAG, RAVENEA, CHARGE, Futurepedia and M²RAG."""


def main() -> None:
    """Console-script entry point: runs the app and turns known errors into exit codes."""
    errors = Console(stderr=True)
    try:
        code = app(standalone_mode=False)
    except M4BuildError as error:
        errors.print(f"[bold red]error:[/] {error.message}", highlight=False)
        if error.hint:
            errors.print(error.hint, highlight=False)
        sys.exit(int(error.exit_code))
    except (KeyboardInterrupt, typer.Abort):
        code = ExitCode.INTERRUPTED
    except ClickException as usage:  # bad or missing flags: click's own message and exit code
        usage.show()
        sys.exit(usage.exit_code)
    except typer.Exit as done:
        code = done.exit_code
    if code == ExitCode.INTERRUPTED:  # typer itself turns a Ctrl-C into this exit code, silently
        errors.print("interrupted: finished work is saved; run the same command again to resume.")
    sys.exit(int(code) if isinstance(code, int) else 0)
