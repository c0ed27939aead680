"""The JSON report of a scored multiple-choice run, shared by the WorldCuisines and CVQA scorers.

Both benchmarks are scored by :func:`m4build.metrics.score_choices`, so their reports share one
shape: the macro average first (the number a paper's table quotes), then the micro average, the
counts, accuracy per prompt type and per (prompt type, language), the per-type averages, and the
inputs that produced them, so that a JSON file found later says what it is a score of.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from m4build.metrics import ChoiceAccuracy


@dataclass(frozen=True)
class ChoiceReport:
    """A scored run: the accuracy, how its groups are named, and where the inputs came from.

    ``mode`` is the scoring mode the user asked for (the CVQA parity reading hands
    ``score_choices`` canonical numbers and scores them in its default mode, so the accuracy's own
    ``mode`` is not always the one to report). ``details`` holds what only one benchmark has
    (CVQA's accuracy per category and its count of unanswered questions, for example).
    """

    benchmark: str
    mode: str
    accuracy: ChoiceAccuracy
    prompt_type_names: dict[str, str]
    inputs: dict[str, Any]
    details: dict[str, Any] = field(default_factory=dict)
    language_label: str = "language"  # what the accuracy's "language" groups are (CVQA: subsets)

    def prompt_type_label(self, prompt_type: str) -> str:
        return self.prompt_type_names.get(prompt_type, prompt_type)

    def prompt_types(self) -> list[str]:
        """The prompt types scored, in the order of their names (WorldCuisines: 1a, 1b, 1c, 2)."""
        return sorted(self.accuracy.by_prompt_type, key=self.prompt_type_label)

    def as_dict(self) -> dict[str, Any]:
        scores = self.accuracy.as_dict()
        return {
            "benchmark": self.benchmark,
            "mode": self.mode,
            "macro": scores["macro"],
            "micro": scores["micro"],
            "n": scores["n"],
            "correct": scores["correct"],
            "unparsable": scores["unparsable"],
            "macro_by_prompt_type": scores["macro_by_prompt_type"],
            "by_prompt_type_and_language": scores["by_prompt_type_and_language"],
            "by_prompt_type": scores["by_prompt_type"],
            "by_language": scores["by_language"],
            "rules": scores["rules"],
            "prompt_type_names": {key: self.prompt_type_label(key) for key in scores["macro_by_prompt_type"]},
            **self.details,
            "inputs": self.inputs,
        }
