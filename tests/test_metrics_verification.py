"""3-way fact verification (M²RAG / Factify): worked examples, M²RAG parity, sklearn parity, bad input."""

from __future__ import annotations

import pytest

from m4build.errors import UsageError
from m4build.metrics.checks import MetricInputError
from m4build.metrics.verification import fact_verification_scores, parse_verdict

GOLD = {"1": "Support", "2": "Support", "3": "Refute", "4": "Insufficient", "5": "Support", "6": "Refute"}
ANSWERS = {
    "1": "Support",
    "2": "**Supported**",
    "3": "Refute",
    "4": "I cannot tell",
    "5": "Refute",
    "6": "<think>The photo is staged.</think>Refute",
}


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("Support", "Support"),
        ("Category: Refute.", "Refute"),
        ("**Insufficient**", "Insufficient"),
        ("refuted - the image shows a different city", "Refute"),
        ("Answer: Supports the claim", "Support"),
        ("Not enough info", "Insufficient"),
        ("Support_Multimodal", "Support"),
        ('```json\n"Refute"\n```', "Refute"),
        ("<think>Maybe refute?</think>\nInsufficient", "Insufficient"),
        ("The claim is not supported", None),  # negation inside a sentence is not guessed at
        ("I cannot tell", None),
        ("", None),
    ],
)
def test_parse_verdict(answer: str, label: str | None) -> None:
    assert parse_verdict(answer) == label


def test_default_reads_answers_and_counts_unparsable_as_wrong() -> None:
    # Read as S, S, R, -, R, R. Accuracy: items 1, 2, 3, 6 right = 4/6.
    # Support: TP 2 (1, 2), FP 0, FN 1 (5): F1 = 2*2 / (4 + 0 + 1) = 0.8.
    # Refute: TP 2 (3, 6), FP 1 (5), FN 0: F1 = 4/5 = 0.8.
    # Insufficient: TP 0, FN 1 (the unparsable 4): F1 = 0. Macro = (0.8 + 0.8 + 0) / 3 = 0.533333.
    scores = fact_verification_scores(ANSWERS, GOLD)
    assert scores.accuracy == pytest.approx(4 / 6)
    assert scores.macro_f1 == pytest.approx(1.6 / 3)
    assert scores.labels == ("Support", "Insufficient", "Refute")
    assert scores.unparsable == 1
    assert scores.predicted["4"] is None
    support = scores.per_label[0]
    assert (support.precision, support.recall, support.support, support.predicted) == (1.0, 2 / 3, 3, 2)


def test_parity_takes_raw_text_as_the_label_like_m2rag() -> None:
    # Only exact names count: items 1 and 3 right = 2/6. Support: TP 1, FN 2: F1 = 2/4 = 0.5.
    # Refute: TP 1 (3), FP 1 (5), FN 1 (6): F1 = 2/4 = 0.5. Insufficient 0, and three raw answers become
    # labels with F1 0 each: macro = (0.5 + 0.5 + 0 + 0 + 0 + 0) / 6 = 0.166667.
    scores = fact_verification_scores(ANSWERS, GOLD, mode="parity")
    assert scores.accuracy == pytest.approx(2 / 6)
    assert scores.macro_f1 == pytest.approx(1 / 6)
    assert len(scores.labels) == 6
    assert scores.unparsable == 3


def test_parity_matches_sklearn_classification_report() -> None:
    pytest.importorskip("sklearn")
    from sklearn.metrics import accuracy_score, classification_report

    ids = sorted(GOLD)
    truth, raw = [GOLD[item] for item in ids], [ANSWERS[item] for item in ids]
    report = classification_report(truth, raw, output_dict=True, zero_division=0)
    scores = fact_verification_scores(ANSWERS, GOLD, mode="parity")
    assert scores.macro_f1 == pytest.approx(report["macro avg"]["f1-score"])
    assert scores.accuracy == pytest.approx(accuracy_score(truth, raw))


def test_default_matches_sklearn_macro_f1_over_the_observed_labels() -> None:
    pytest.importorskip("sklearn")
    from sklearn.metrics import f1_score

    scores = fact_verification_scores(ANSWERS, GOLD)
    ids = sorted(GOLD)
    read = [scores.predicted[item] or "unparsable" for item in ids]
    expected = f1_score([GOLD[item] for item in ids], read, labels=list(scores.labels), average="macro")
    assert scores.macro_f1 == pytest.approx(expected)


def test_labels_absent_from_gold_and_predictions_are_left_out_and_listed() -> None:
    # Support: TP 1, FN 1: F1 = 2/3; Refute: TP 1, FP 1: F1 = 2/3; no Insufficient anywhere.
    gold = {"a": "Support", "b": "Support", "c": "Refute"}
    answers = {"a": "Support", "b": "Refute", "c": "Refute"}
    scores = fact_verification_scores(answers, gold)
    assert scores.labels == ("Support", "Refute")
    assert scores.absent_labels == ("Insufficient",)
    assert scores.macro_f1 == pytest.approx(2 / 3)


def test_a_label_predicted_but_not_in_gold_counts_with_f1_zero() -> None:
    # Support: TP 1, FN 1: F1 = 2/3. Insufficient: predicted once, never gold: F1 0. Macro = 1/3.
    gold = {"a": "Support", "b": "Support"}
    answers = {"a": "Support", "b": "Insufficient"}
    scores = fact_verification_scores(answers, gold)
    assert scores.labels == ("Support", "Insufficient")
    assert scores.macro_f1 == pytest.approx(1 / 3)


def test_factify_five_way_gold_labels_are_folded() -> None:
    gold = {"a": "Support_Text", "b": "Insufficient_Multimodal", "c": "refute"}
    answers = {"a": "Support", "b": "Insufficient", "c": "Refute"}
    for mode in ("default", "parity"):
        assert fact_verification_scores(answers, gold, mode=mode).accuracy == 1.0


@pytest.mark.parametrize(
    ("answers", "gold", "problem"),
    [
        ({"a": "Support"}, {"a": "Support", "b": "Refute"}, "references without a prediction"),
        ({"a": "Support"}, {"a": "True"}, "unknown gold labels"),
        ({"a": "Support"}, {"a": None}, "missing gold labels"),
        ({"a": None}, {"a": "Support"}, "missing or non-text predictions"),
        ({"a": float("nan")}, {"a": "Support"}, "missing or non-text predictions"),
        ({}, {}, "inputs without any item"),
    ],
)
def test_bad_verification_input_is_refused(answers: dict, gold: dict, problem: str) -> None:
    with pytest.raises(MetricInputError, match=problem):
        fact_verification_scores(answers, gold)


def test_unknown_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        fact_verification_scores({"a": "Support"}, {"a": "Support"}, mode="sklearn")  # type: ignore[arg-type]


def test_as_dict_is_json_ready() -> None:
    summary = fact_verification_scores(ANSWERS, GOLD).as_dict()
    assert summary["per_label"][0]["label"] == "Support"
    assert summary["predicted"]["4"] is None
