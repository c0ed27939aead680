"""Where the packaged data folders (builders/, corpora/, annotation/, hub_cards/) live.

An installed wheel carries them under ``m4build/_data``; an editable install or a source checkout
reads them from the repository root. Callers never need to know which.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

DATA_FOLDERS = ("builders", "corpora", "annotation", "hub_cards")


@cache
def data_root() -> Path:
    """The folder that holds the four data folders."""
    packaged = Path(__file__).parent / "_data"
    if (packaged / "corpora").is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "corpora").is_dir():
        return checkout
    raise FileNotFoundError(
        f"m4build's data folders are missing (looked in {packaged} and {checkout}); reinstall m4build"
    )


def data_path(*parts: str) -> Path:
    """Path to a packaged data file, e.g. ``data_path("corpora", "languages.yaml")``."""
    if not parts or parts[0] not in DATA_FOLDERS:
        raise ValueError(f"data paths start with one of {DATA_FOLDERS}, got {parts!r}")
    return data_root().joinpath(*parts)
