"""Correctness retention, correction rate and judge-score bins (m4build.metrics.paired)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from m4build.metrics.checks import MetricInputError
from m4build.metrics.paired import (
    INTEGER_JUDGE_BINS,
    JudgeScore,
    rag_effect,
    rag_effect_by_judge_score,
    summarize_judge_scores,
)

WITHOUT_RAG = {"a": True, "b": True, "c": False, "d": False, "e": False}
WITH_RAG = {"a": True, "b": False, "c": True, "d": False, "e": True}
# Judge scores per passage; means: a 4.0, b 1.0, c 2.5, d 5.0, e 1.5.
JUDGED = [
    JudgeScore("a", "p1", 5),
    JudgeScore("a", "p2", 3),
    JudgeScore("a", "p3", 4),
    JudgeScore("b", "p1", 1),
    JudgeScore("c", "p1", 2),
    JudgeScore("c", "p2", 3.0),
    JudgeScore("d", "p1", 5),
    JudgeScore("d", "p2", 5),
    JudgeScore("e", "p1", 1),
    JudgeScore("e", "p2", np.int64(2)),
]


def test_retention_and_correction_worked_example():
    effect = rag_effect(WITHOUT_RAG, WITH_RAG)
    # a: right -> right (retained); b: right -> wrong (lost); c, e: wrong -> right (corrected);
    # d: wrong -> wrong. Retention = 1 / (1 + 1) = 0.5; correction = 2 / (2 + 1) = 2/3.
    assert (effect.retained, effect.lost, effect.corrected, effect.still_wrong) == (1, 1, 2, 1)
    assert effect.retention == 0.5
    assert effect.correction == pytest.approx(2 / 3)
    # Accuracy without RAG 2/5, with RAG 3/5.
    assert (effect.accuracy_without_rag, effect.accuracy_with_rag) == (0.4, 0.6)
    assert effect.as_dict()["n"] == 5


def test_a_rate_with_no_items_to_count_is_undefined_not_zero():
    effect = rag_effect({"a": False, "b": False}, {"a": True, "b": False})
    assert effect.retention is None
    assert effect.correction == 0.5


def test_numpy_booleans_are_accepted():
    effect = rag_effect({"a": np.bool_(True)}, {"a": np.bool_(False)})
    assert (effect.lost, effect.retention) == (1, 0.0)


def test_runs_over_different_items_are_refused_with_counts_and_examples():
    with pytest.raises(MetricInputError) as raised:
        rag_effect({"a": True, "b": True, "c": False}, {"a": True, "z": False})
    message = str(raised.value)
    assert "2 items only in the run without RAG (e.g. 'b', 'c')" in message
    assert "1 items only in the run with RAG (e.g. 'z')" in message


def test_correctness_must_be_true_or_false():
    with pytest.raises(MetricInputError) as raised:
        rag_effect({"a": None, "b": math.nan, "c": True}, {"a": True, "b": True, "c": 1})
    message = str(raised.value)
    assert "2 items whose correctness without RAG is not True/False (e.g. 'a': None, 'b': nan)" in message
    assert "1 items whose correctness with RAG is not True/False (e.g. 'c': 1)" in message


def test_empty_runs_are_refused():
    with pytest.raises(MetricInputError, match="both are empty"):
        rag_effect({}, {})


def test_judge_scores_are_summarized_per_item():
    summaries = summarize_judge_scores(JUDGED)
    # a: (5 + 3 + 4) / 3 = 4.0, max 5, three passages.
    assert summaries["a"].as_dict() == {"item_id": "a", "mean": 4.0, "max": 5.0, "count": 3}
    assert (summaries["c"].mean, summaries["e"].mean) == (2.5, 1.5)
    assert list(summaries) == ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize(
    ("score", "problem"),
    [
        (0, "scores outside 1..5"),
        (5.5, "scores outside 1..5"),
        (math.nan, "missing scores"),
        (None, "missing scores"),
        ("4", "scores that are not numbers"),
        (True, "scores that are not numbers"),
    ],
)
def test_bad_judge_scores_are_refused(score, problem):
    with pytest.raises(MetricInputError, match=f"1 {problem}"):
        summarize_judge_scores([JudgeScore("a", "p1", 3), JudgeScore("a", "p2", score)])


def test_a_passage_scored_twice_is_refused():
    with pytest.raises(MetricInputError, match=r"1 duplicate \(item, passage\) scores \(e.g. 'a'/'p1': 4\)"):
        summarize_judge_scores([JudgeScore("a", "p1", 3), JudgeScore("a", "p1", 4)])


def test_no_judge_scores_is_refused():
    with pytest.raises(MetricInputError, match="none were given"):
        summarize_judge_scores([])


def test_retention_and_correction_per_integer_bin_of_mean_judge_score():
    result = rag_effect_by_judge_score(WITHOUT_RAG, WITH_RAG, JUDGED)
    assert INTEGER_JUDGE_BINS == (1, 2, 3, 4, 5)
    by_label = {judge_bin.label: judge_bin.effect for judge_bin in result.bins}
    assert list(by_label) == ["[1, 2)", "[2, 3)", "[3, 4)", "[4, 5]"]
    # [1, 2): b (right -> wrong) and e (wrong -> right): retention 0/1, correction 1/1.
    assert (by_label["[1, 2)"].retention, by_label["[1, 2)"].correction) == (0.0, 1.0)
    # [2, 3): c (wrong -> right) only: no item to retain.
    assert (by_label["[2, 3)"].retention, by_label["[2, 3)"].correction) == (None, 1.0)
    # [3, 4): empty.
    assert by_label["[3, 4)"].n == 0
    # [4, 5] is closed: a (4.0, right -> right) and d (5.0, wrong -> wrong).
    assert (by_label["[4, 5]"].retention, by_label["[4, 5]"].correction) == (1.0, 0.0)
    assert result.overall == rag_effect(WITHOUT_RAG, WITH_RAG)
    report = result.as_dict()
    json.dumps(report)
    assert report["bins"][3] == {"label": "[4, 5]", "low": 4.0, "high": 5.0, **by_label["[4, 5]"].as_dict()}


def test_bins_are_configurable():
    result = rag_effect_by_judge_score(WITHOUT_RAG, WITH_RAG, JUDGED, edges=(1, 3, 5))
    # [1, 3): b, c, e -> lost 1, corrected 2; [3, 5]: a, d -> retained 1, still wrong 1.
    low, high = result.bins
    assert (low.effect.lost, low.effect.corrected, low.effect.n) == (1, 2, 3)
    assert (high.label, high.effect.retained, high.effect.still_wrong) == ("[3, 5]", 1, 1)


def test_means_outside_the_bins_are_refused_not_dropped():
    with pytest.raises(
        MetricInputError, match=r"1 items whose mean judge score is outside the bins \(e.g. 'b': 1\)"
    ):
        rag_effect_by_judge_score(WITHOUT_RAG, WITH_RAG, JUDGED, edges=(1.5, 5))


@pytest.mark.parametrize("edges", [(5, 1), (1,), (1, 1, 5), (1, math.inf)])
def test_bad_bin_edges_are_refused(edges):
    with pytest.raises(MetricInputError, match="Cannot bin judge scores"):
        rag_effect_by_judge_score(WITHOUT_RAG, WITH_RAG, JUDGED, edges=edges)


def test_judge_scores_must_cover_the_paired_items():
    judged = [score for score in JUDGED if score.item_id != "e"] + [JudgeScore("x", "p1", 3)]
    with pytest.raises(MetricInputError) as raised:
        rag_effect_by_judge_score(WITHOUT_RAG, WITH_RAG, judged)
    message = str(raised.value)
    assert "1 items only in the runs (no judge score) (e.g. 'e')" in message
    assert "1 items only with judge scores (e.g. 'x')" in message
