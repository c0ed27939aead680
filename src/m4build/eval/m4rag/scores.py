"""Scores of an evaluation: accuracy per setting, RAG's effect against no-rag, judge scores, languages.

Accuracy is computed from the stored raw outputs with ``m4build.metrics.score_choices`` (so the
parse mode can be changed without asking the model again): per language, per prompt type, the
WorldCuisines macro average and the micro average, with unparsable answers counted. Items that
failed before or during inference are left out of accuracy and counted, never scored as wrong
answers of the model. Retention and correction compare each RAG setting with ``no-rag`` on the
items both answered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from m4build.eval.m4rag.settings import BASELINE
from m4build.metrics.choice import ChoiceRecord, score_choices
from m4build.metrics.paired import JudgeScore, rag_effect, rag_effect_by_judge_score, summarize_judge_scores

# Settings compared per language: (English, translated).
LANGUAGE_PAIRS = {
    "prompt": (BASELINE, "no-rag-multilingual-prompt"),
    "context": ("oracle", "oracle-multilingual"),
}


def compute_scores(
    predictions: Mapping[str, Sequence[Mapping[str, Any]]],
    judge_rows: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    mode: str = "default",
    options: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """``scores.json``: predictions and judge rows per setting in, every aggregate out."""
    settings: dict[str, Any] = {}
    correct: dict[str, dict[str, bool]] = {}
    for name, rows in predictions.items():
        answered = [row for row in rows if not row["error"]]
        entry: dict[str, Any] = {"items": len(rows), "failed": len(rows) - len(answered)}
        if answered:
            accuracy = score_choices(
                [
                    ChoiceRecord(
                        item_id=row["item_id"],
                        language=row["lang"],
                        prompt_type=row["prompt_type"],
                        raw_output=row["raw_output"],
                        gold_option=row["gold_option"],
                        options=tuple(options[row["item_id"]]) if options else None,
                    )
                    for row in answered
                ],
                mode=mode,
            )
            entry["accuracy"] = accuracy.as_dict()
            correct[name] = {graded.item_id: graded.correct for graded in accuracy.items}
        settings[name] = entry
    scores: dict[str, Any] = {"mode": mode, "settings": settings}
    scores["rag_effect"] = _rag_effects(correct)
    scores["judge"] = _judge(correct, judge_rows)
    scores["languages"] = _language_changes(settings)
    return scores


def _rag_effects(correct: Mapping[str, Mapping[str, bool]]) -> dict[str, Any]:
    if BASELINE not in correct:
        return {}
    baseline = correct[BASELINE]
    effects = {}
    for name, run in correct.items():
        if name == BASELINE or name == "no-rag-multilingual-prompt":
            continue
        common = sorted(set(baseline) & set(run))
        effects[name] = rag_effect({i: baseline[i] for i in common}, {i: run[i] for i in common}).as_dict()
    return effects


def _judge(
    correct: Mapping[str, Mapping[str, bool]], judge_rows: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    judged: dict[str, Any] = {}
    for name, rows in judge_rows.items():
        scores = [JudgeScore(row["item_id"], row["passage_id"], row["score"]) for row in rows if row["score"] is not None]
        if not scores:
            continue
        summaries = summarize_judge_scores(scores)
        entry: dict[str, Any] = {
            "pairs": len(rows),
            "failed": sum(1 for row in rows if row["score"] is None),
            "items": len(summaries),
            "mean": sum(s.mean for s in summaries.values()) / len(summaries),
            "per_item": {item_id: summary.as_dict() for item_id, summary in sorted(summaries.items())},
        }
        if BASELINE in correct and name in correct:
            common = sorted(set(correct[BASELINE]) & set(correct[name]) & set(summaries))
            if common:
                by_score = rag_effect_by_judge_score(
                    {i: correct[BASELINE][i] for i in common},
                    {i: correct[name][i] for i in common},
                    [score for score in scores if score.item_id in set(common)],
                )
                entry["rag_effect_by_score"] = by_score.as_dict()
        judged[name] = entry
    return judged


def _language_changes(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Per language: accuracy with the English prompt (or context) and with the translated one."""
    changes: dict[str, Any] = {}
    for what, (english, translated) in LANGUAGE_PAIRS.items():
        if "accuracy" not in settings.get(english, {}) or "accuracy" not in settings.get(translated, {}):
            continue
        before = settings[english]["accuracy"]["by_language"]
        after = settings[translated]["accuracy"]["by_language"]
        changes[what] = {
            lang: {
                "english": before[lang]["accuracy"],
                "translated": after[lang]["accuracy"],
                "change": after[lang]["accuracy"] - before[lang]["accuracy"],
            }
            for lang in sorted(set(before) & set(after))
        }
    return changes
