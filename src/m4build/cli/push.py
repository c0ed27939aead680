"""``m4build push``: publish a corpus run folder (and its indexes) as a Hub dataset repo."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from m4build.dataset_card import human_bytes
from m4build.hub.push import check_repo_id, hub_token, push_folder
from m4build.hub.repo import RepoPlan, plan_repo, write_repo_folder


def push_command(
    run: Path = typer.Argument(..., help="The run folder of `m4build corpus` (indexed or not)."),
    repo: str = typer.Option(..., "--repo", help="The dataset repo to publish to, org/name."),
    private: bool = typer.Option(
        False, "--private", help="Create the repo private (refused if it exists publicly)."
    ),
    revision: str = typer.Option(None, "--revision", help="Branch to push to; created from main if missing."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Write the repo folder and print the plan; upload nothing."
    ),
    folder: Path = typer.Option(
        None, "--folder", help="Where to assemble the repo folder (default RUN/hub)."
    ),
) -> None:
    """Publish a corpus run folder to the Hugging Face Hub as a dataset with its index shards.

    Token and endpoint come from the standard HF environment (HF_TOKEN or `hf auth login`,
    HF_ENDPOINT). A failed upload resumes when the same command is run again.

    Example: m4build push runs/wc-sample --repo my-lab/m4rag-worldcuisines --dry-run
    """
    check_repo_id(repo)
    token = None if dry_run else hub_token()
    console = Console()
    plan = plan_repo(run, repo)
    target = write_repo_folder(plan, folder or run / "hub")
    print_plan(console, plan, target)
    if dry_run:
        console.print(f'dry run: nothing uploaded. Load it with datasets.load_dataset("{target}", "default")')
        return
    console.print(f"uploading to {repo}" + (f" (branch {revision})" if revision else "") + " ...")
    url = push_folder(target, repo, token=token, private=private, revision=revision)
    console.print(f"pushed: {url}")


def print_plan(console: Console, plan: RepoPlan, target: Path) -> None:
    """Files grouped by folder with sizes, then the configs, so a user can check before uploading."""
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for file in plan.files:
        group = groups[file.path.rsplit("/", 1)[0] if "/" in file.path else "."]
        group[0] += 1
        group[1] += file.bytes
    files = Table(title=f"Repo folder {target} -> {plan.repo_id}")
    files.add_column("folder")
    files.add_column("files", justify="right")
    files.add_column("size", justify="right")
    for name, (count, size) in sorted(groups.items()):
        files.add_row(name, str(count), human_bytes(size))
    files.add_row("README.md (card)", "1", human_bytes(len(plan.readme.encode("utf-8"))))
    console.print(files)
    configs = Table(title="Configs (README front matter)")
    for column in ("config", "rows", "files"):
        configs.add_column(column)
    for config in plan.configs:
        configs.add_row(config.name, str(config.rows), config.pattern)
    console.print(configs)
    languages = (
        ", ".join(sorted(plan.index["languages"])) if plan.index else "none (run `m4build index` first)"
    )
    console.print(f"{len(plan.paths)} files, {human_bytes(plan.total_bytes)}; index languages: {languages}")
