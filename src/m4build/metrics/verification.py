"""Accuracy and macro-F1 for M²RAG's 3-way multimodal fact verification (Factify claims).

Reference: M²RAG (Liu et al. 2025, "Benchmarking Retrieval-Augmented Generation in Multi-Modal
Contexts"), NEUIR/M2RAG. The prompt (``data/finetune/get_prompt_new.py``) asks the model to answer with
one of ``Support``, ``Insufficient`` or ``Refute`` "directly"; ``src/evaluation/classification.py``
reads the model's raw ``text`` field as the predicted label and reports sklearn's ``accuracy_score``
and ``classification_report``, whose macro average is the unweighted mean of per-label F1 over the
labels found in the gold or the predicted labels (``unique_labels(y_true, y_pred)``).

Gold labels: the three names, in any case, or Factify's five categories (``Support_Text``,
``Support_Multimodal``, ``Insufficient_Text``, ``Insufficient_Multimodal``, ``Refute``), folded to
three. M²RAG's ``data/data_preprocess/fact_verify/select_data.py`` means to fold them but compares
(``item['category']=='Support'``) where it should assign, so its data files may still carry the five
categories; scored against "Support" those would all be wrong, and we fold them in both modes.

=============================  ======================================  ==================================
                               M²RAG (``mode="parity"``)               ours (``mode="default"``)
=============================  ======================================  ==================================
reading the prediction         the raw text must equal a label name    ``parse_verdict``: reasoning and
                               exactly ("Support." or "support" is     fences removed, case, Markdown,
                               not Support)                            "Category:" prefixes and inflected
                                                                       forms ("Supported") accepted
unparsable prediction          a label of its own: adds a class with   wrong, counted in ``unparsable``;
                               F1 0 to the macro average               no extra class
=============================  ======================================  ==================================

Both modes count an unparsable prediction as wrong for accuracy and as a miss (false negative) of
its gold label. A label that appears in neither the gold nor the predictions has no defined F1
(0/0); both modes leave it out of the macro average, as sklearn's default label set does, and the
result lists it in ``absent_labels``. A label predicted but absent from the gold has F1 0 and counts.
Per-label F1 is 2TP / (2TP + FP + FN), which equals sklearn's 2PR / (P + R) with P or R taken as 0
when undefined.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from m4build.errors import UsageError
from m4build.metrics.checks import InputProblems, check_same_ids, is_missing_number
from m4build.text.reasoning import final_answer

Mode = Literal["default", "parity"]
MODES: tuple[str, ...] = ("default", "parity")
VERDICT_LABELS: tuple[str, ...] = ("Support", "Insufficient", "Refute")  # M²RAG's prompt order

_GOLD_NAMES = {
    "support": "Support",
    "support_text": "Support",
    "support_multimodal": "Support",
    "insufficient": "Insufficient",
    "insufficient_text": "Insufficient",
    "insufficient_multimodal": "Insufficient",
    "refute": "Refute",
}
_ANSWER_NAMES = {
    **_GOLD_NAMES,
    "not enough info": "Insufficient",
    "not enough information": "Insufficient",
    "nei": "Insufficient",
}
_LEADING_VERDICT = re.compile(r"(support(?:s|ed|ing)?|refut(?:e|es|ed|ing)|insufficient)\b")
_VERDICT_STEMS = {"support": "Support", "refut": "Refute", "insufficient": "Insufficient"}
_ANSWER_PREFIX = re.compile(r"^(?:final\s+)?(?:answer|category|label|verdict|prediction)\s*[:\-]\s*")
_DECORATION = re.compile(r"[*`#>\"'“”‘’\[\](){}]|(?<!\w)_+|_+(?!\w)")
_HINT = (
    "Give one prediction per gold id, and gold labels Support, Insufficient or Refute (or Factify's five)."
)


@dataclass(frozen=True)
class LabelScores:
    """One label's precision, recall and F1, with its gold count (support) and predicted count."""

    label: str
    precision: float
    recall: float
    f1: float
    support: int
    predicted: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
            "predicted": self.predicted,
        }


@dataclass(frozen=True)
class VerificationScores:
    """Accuracy and macro-F1 over ``labels`` (the labels averaged), with what could not be read."""

    mode: str
    accuracy: float
    macro_f1: float
    labels: tuple[str, ...]
    per_label: tuple[LabelScores, ...]
    absent_labels: tuple[str, ...]
    items: int
    unparsable: int
    predicted: dict[str, str | None]

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "labels": list(self.labels),
            "per_label": [scores.as_dict() for scores in self.per_label],
            "absent_labels": list(self.absent_labels),
            "items": self.items,
            "unparsable": self.unparsable,
            "predicted": dict(self.predicted),
        }


def parse_verdict(text: str) -> str | None:
    """The label a model's answer gives (``Support``, ``Insufficient``, ``Refute``), or ``None``.

    Reads only the start of the final answer: the whole first line must be a label (in any case,
    Factify's names or "not enough info" included), or begin with one ("Refuted. The image shows
    ..."). A verdict further inside a sentence ("the claim is not supported") is not guessed at,
    because negation would turn it around.
    """
    answer = final_answer(text)
    lines = [line for line in answer.splitlines() if line.strip()]
    if not lines:
        return None
    first = _DECORATION.sub("", lines[0]).strip().lower()
    first = _ANSWER_PREFIX.sub("", first).strip().rstrip(".!,;:").strip()
    if first in _ANSWER_NAMES:
        return _ANSWER_NAMES[first]
    leading = _LEADING_VERDICT.match(first)
    if leading is None:
        return None
    return next(label for stem, label in _VERDICT_STEMS.items() if leading.group(1).startswith(stem))


def fact_verification_scores(
    predictions: Mapping[str, str], gold: Mapping[str, str], *, mode: Mode = "default"
) -> VerificationScores:
    """Accuracy and macro-F1 of model answers against gold verdicts (see the module docstring)."""
    if mode not in MODES:
        raise UsageError(f"Unknown fact-verification mode {mode!r}.", f"Use one of: {', '.join(MODES)}.")
    ids, gold_labels = _checked(predictions, gold)
    predicted = {item: _read_prediction(predictions[item], mode) for item in ids}
    observed = set(gold_labels.values()) | {label for label in predicted.values() if label is not None}
    labels = tuple(label for label in VERDICT_LABELS if label in observed) + tuple(
        sorted(observed - set(VERDICT_LABELS))
    )
    per_label = tuple(_label_scores(label, gold_labels, predicted) for label in labels)
    correct = sum(1 for item in ids if predicted[item] == gold_labels[item])
    return VerificationScores(
        mode=mode,
        accuracy=correct / len(ids),
        macro_f1=sum(scores.f1 for scores in per_label) / len(per_label),
        labels=labels,
        per_label=per_label,
        absent_labels=tuple(label for label in VERDICT_LABELS if label not in observed),
        items=len(ids),
        unparsable=sum(1 for label in predicted.values() if label not in VERDICT_LABELS),
        predicted={item: label if label in VERDICT_LABELS else None for item, label in predicted.items()},
    )


def _checked(predictions: Mapping[str, str], gold: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """Sorted ids and the gold labels folded to three; bad input raises ``MetricInputError``."""
    what = "fact verification"
    problems = InputProblems(what)
    if not predictions and not gold:
        problems.add("inputs without any item", "no predictions and no gold labels")
        problems.raise_if_any(_HINT)
    check_same_ids(what, predictions, gold, _HINT)
    ids = sorted(gold)
    gold_labels = {}
    for item in ids:
        label = gold[item]
        if is_missing_number(label) or not isinstance(label, str):
            problems.add("missing gold labels", item)
        elif label.strip().lower() not in _GOLD_NAMES:
            problems.add("unknown gold labels", f"{item}: {label!r}")
        else:
            gold_labels[item] = _GOLD_NAMES[label.strip().lower()]
        if is_missing_number(predictions[item]) or not isinstance(predictions[item], str):
            problems.add("missing or non-text predictions", item)
    problems.raise_if_any(_HINT)
    return ids, gold_labels


def _read_prediction(text: str, mode: str) -> str | None:
    """The predicted label, ``None`` if unreadable; parity keeps the raw text, a label of its own
    unless it is a label name exactly (as the raw string is in M²RAG's report)."""
    return text if mode == "parity" else parse_verdict(text)


def _label_scores(label: str, gold: Mapping[str, str], predicted: Mapping[str, str | None]) -> LabelScores:
    pairs = Counter((gold[item] == label, predicted[item] == label) for item in gold)
    true_positive, false_positive, false_negative = pairs[True, True], pairs[False, True], pairs[True, False]
    support, predicted_count = true_positive + false_negative, true_positive + false_positive
    denominator = 2 * true_positive + false_positive + false_negative
    return LabelScores(
        label=label,
        precision=true_positive / predicted_count if predicted_count else 0.0,
        recall=true_positive / support if support else 0.0,
        f1=2 * true_positive / denominator if denominator else 0.0,
        support=support,
        predicted=predicted_count,
    )
