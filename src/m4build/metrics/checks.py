"""Bad metric input is reported, never silently scored.

A score computed over predictions whose ids do not match the references, over NaNs, or over
languages nobody declared is a wrong number that looks right. Every metric collects what it
found wrong in an ``InputProblems`` and raises one ``MetricInputError`` that says how many
inputs had each problem and shows a few of them, so the user can find and fix the rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from m4build.errors import ExitCode, M4BuildError

EXAMPLES_SHOWN = 3


class MetricInputError(M4BuildError):
    """Metric inputs that cannot be scored as given (exit code 3, like any malformed input)."""

    exit_code = ExitCode.INPUT


@dataclass
class InputProblems:
    """Problems found in one metric's inputs, grouped by kind, with a few examples of each."""

    what: str
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, problem: str, example: object) -> None:
        self.counts[problem] = self.counts.get(problem, 0) + 1
        shown = self.examples.setdefault(problem, [])
        if len(shown) < EXAMPLES_SHOWN:
            shown.append(str(example))

    def __bool__(self) -> bool:
        return bool(self.counts)

    def message(self) -> str:
        parts = []
        for problem in sorted(self.counts):
            examples = ", ".join(self.examples[problem])
            parts.append(f"{self.counts[problem]} {problem} (e.g. {examples})")
        return f"Cannot score {self.what}: " + "; ".join(parts) + "."

    def raise_if_any(self, hint: str) -> None:
        """Raise ``MetricInputError`` naming every problem found, with ``hint`` saying how to fix it."""
        if self:
            raise MetricInputError(self.message(), hint)


def is_missing_number(value: object) -> bool:
    """True for ``None`` and NaN, the two ways a score goes missing in pandas-made files."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def check_same_ids(what: str, predicted: Iterable[str], expected: Iterable[str], hint: str) -> None:
    """Refuse to score when predictions and references do not cover the same ids."""
    predicted_ids, expected_ids = set(predicted), set(expected)
    problems = InputProblems(what)
    for missing in sorted(expected_ids - predicted_ids):
        problems.add("references without a prediction", missing)
    for extra in sorted(predicted_ids - expected_ids):
        problems.add("predictions without a reference", extra)
    problems.raise_if_any(hint)
