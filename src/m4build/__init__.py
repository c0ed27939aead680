"""m4build: build multilingual and multimodal RAG benchmarks and publish them to the Hugging Face Hub."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# Loaded on first use: ``import m4build`` stays cheap for the CLI and for code that never searches.
_LAZY = {"load_index": "m4build.hub.load"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'm4build' has no attribute {name!r}")
