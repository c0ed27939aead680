"""Deterministic splits stratified by country.

Within each country, instances are ordered by a seeded hash of their file name and cut by the
split fractions, so every country appears in every split in proportion, the assignment never
depends on input order, and adding images to one country leaves the others' splits unchanged.
Rounding goes to the earlier splits (largest remainders), so the split sizes sum exactly.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence

from m4build.errors import ConfigError


def stratified_splits(
    instances: Sequence[tuple[str, str]], fractions: Mapping[str, float], seed: int
) -> dict[str, str]:
    """``file_name -> split`` for ``(file_name, country)`` pairs."""
    total = sum(fractions.values())
    if not fractions or abs(total - 1.0) > 1e-6 or any(value < 0 for value in fractions.values()):
        raise ConfigError(
            f"Split fractions must be non-negative and sum to 1, got {dict(fractions)}.",
            "Fix `splits:` in the recipe, e.g. {train: 0.7, validation: 0.1, test: 0.2}.",
        )
    by_country: dict[str, list[str]] = defaultdict(list)
    for file_name, country in instances:
        by_country[country].append(file_name)
    assignment: dict[str, str] = {}
    for country, names in sorted(by_country.items()):
        ordered = sorted(names, key=lambda name: hashlib.sha256(f"{seed}:{country}:{name}".encode()).hexdigest())
        sizes = _sizes(len(ordered), fractions)
        start = 0
        for split, size in sizes.items():
            for name in ordered[start : start + size]:
                assignment[name] = split
            start += size
    return assignment


def _sizes(count: int, fractions: Mapping[str, float]) -> dict[str, int]:
    exact = {split: count * fraction for split, fraction in fractions.items()}
    sizes = {split: int(value) for split, value in exact.items()}
    remainders = sorted(fractions, key=lambda split: (-(exact[split] - sizes[split]), list(fractions).index(split)))
    for split in remainders[: count - sum(sizes.values())]:
        sizes[split] += 1
    return sizes
