"""Small parsing helpers shared by the command modules."""

from __future__ import annotations


def comma_list(value: str | None) -> list[str] | None:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; None when the flag was not given."""
    return [part.strip() for part in value.split(",") if part.strip()] if value else None
