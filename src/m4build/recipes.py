"""Recipes: YAML files of parameters (never code) that a command starts from.

The default recipe of each builder ships in ``builders/``; a user copies one, edits it and passes
``--recipe my.yaml``. Flags given on the command line override recipe values, and the effective
recipe is snapshotted into the run folder and the manifest.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from m4build.errors import InputFileError, UsageError
from m4build.resources import data_path


def load_recipe(name: str, path: Path | None = None) -> dict[str, Any]:
    """The recipe at ``path``, or the packaged default ``builders/{name}.yaml``."""
    source = path if path is not None else data_path("builders", f"{name}.yaml")
    try:
        loaded = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFileError(f"recipe not found: {source}", "Pass an existing YAML file with --recipe.") from None
    except yaml.YAMLError as exc:
        raise InputFileError(f"recipe {source} is not valid YAML: {exc}", "Fix the YAML syntax.") from None
    if not isinstance(loaded, dict):
        raise InputFileError(f"recipe {source} must be a YAML mapping of parameters", None)
    if loaded.get("recipe", name) != name:
        raise UsageError(
            f"recipe {source} is a {loaded.get('recipe')!r} recipe, not {name!r}",
            f"Start from builders/{name}.yaml.",
        )
    return loaded


def with_overrides(recipe: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``recipe`` with every override that is not None applied (flags win)."""
    merged = copy.deepcopy(dict(recipe))
    for key, value in overrides.items():
        if value is not None:
            merged[key] = value
    return merged
