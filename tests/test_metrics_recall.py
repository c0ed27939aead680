"""Recall@k, and CHARGE's multimodal recall on real Chart-MRAG corpus chunks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from m4build.errors import UsageError
from m4build.metrics.checks import MetricInputError
from m4build.metrics.recall import MultimodalEvidence, multimodal_recall, recall_at_k, split_sentences
from m4build.metrics.trec import RankedDoc

CORPUS_SAMPLE = Path(__file__).parent / "fixtures" / "charge" / "text_corpus_sample.jsonl"


@pytest.fixture(scope="module")
def chunks() -> dict[str, str]:
    """Chunk id -> text, from 8 lines of CHARGE's text corpus (see fixtures/charge/ATTRIBUTION.md)."""
    with CORPUS_SAMPLE.open(encoding="utf-8") as handle:
        return {record["id"]: record["text"] for record in map(json.loads, handle)}


def ranked(*docs: tuple[str, float]) -> tuple[RankedDoc, ...]:
    return tuple(RankedDoc(doc_id, score, rank) for rank, (doc_id, score) in enumerate(docs))


def test_recall_at_k_worked_example() -> None:
    relevant = {"q1": {"a", "b", "c"}, "q2": {"z"}}
    run = {
        "q1": ranked(("a", 0.9), ("x", 0.8), ("b", 0.7), ("y", 0.6)),
        # z and w tie; w has the lower id, so it comes first whatever the input order.
        "q2": ranked(("z", 0.5), ("w", 0.5)),
    }
    scores = recall_at_k(run, relevant, depths=(1, 3, 5))
    # q1: top1 {a} → 1/3; top3 {a, x, b} → 2/3; top5 the same 2/3.
    # q2: top1 {w} → 0; top3 {w, z} → 1.
    assert scores.per_query[0].recall == pytest.approx({1: 1 / 3, 3: 2 / 3, 5: 2 / 3})
    assert scores.per_query[1].recall == {1: 0.0, 3: 1.0, 5: 1.0}
    # Means: (1/3 + 0)/2, (2/3 + 1)/2, (2/3 + 1)/2.
    assert scores.recall == pytest.approx({1: 1 / 6, 3: 5 / 6, 5: 5 / 6})
    report = scores.as_dict()
    assert report["Recall@3"] == pytest.approx(5 / 6) and report["queries"] == 2
    assert report["per_query"][1] == {
        "query": "q2",
        "relevant": 1,
        "Recall@1": 0.0,
        "Recall@3": 1.0,
        "Recall@5": 1.0,
    }


def test_recall_bad_input() -> None:
    with pytest.raises(MetricInputError, match="1 queries without a relevant document \\(e.g. q1\\)"):
        recall_at_k({"q1": ranked(("a", 1.0))}, {"q1": set()})
    with pytest.raises(MetricInputError, match="predictions without a reference"):
        recall_at_k({"q1": ranked(("a", 1.0)), "q2": ranked(("b", 1.0))}, {"q1": {"a"}})
    with pytest.raises(MetricInputError, match="documents ranked twice"):
        recall_at_k({"q1": ranked(("a", 1.0), ("a", 0.5))}, {"q1": {"a"}})
    with pytest.raises(MetricInputError, match="empty query sets"):
        recall_at_k({}, {})
    with pytest.raises(UsageError):
        recall_at_k({"q1": ranked(("a", 1.0))}, {"q1": {"a"}}, depths=())


def test_split_sentences() -> None:
    text = (
        "Age differences among Democrats are much more muted.\n\nOf the major U.S. religious groups, "
        'White evangelicals (57%) have the most. He said "Stop!" Then left? yes. 22% agree.'
    )
    assert split_sentences(text) == [
        "Age differences among Democrats are much more muted.",
        "Of the major U.S. religious groups, White evangelicals (57%) have the most.",
        'He said "Stop!"',
        "Then left? yes.",
        "22% agree.",
    ]
    assert split_sentences("  \n\n ") == []


def test_multimodal_recall_worked_example(chunks: dict[str, str]) -> None:
    # The reference text is two corpus sentences (04_03 and 04_04) plus one chart; the retriever
    # returned 04_04 and 04_06 and the right chart.
    reference = MultimodalEvidence(
        texts=[chunks["paragraph_00247_04_03"] + " " + chunks["paragraph_00247_04_04"]],
        charts=["chart_00247_04.png"],
    )
    retrieved = MultimodalEvidence(
        texts=[chunks["paragraph_00247_04_04"], chunks["paragraph_00247_04_06"]],
        charts=["chart_00247_04.png"],
    )
    scores = multimodal_recall({"item1": retrieved}, {"item1": reference})
    item = scores.per_item[0]
    # Units: 2 sentences + 1 chart; found: 04_04 and the chart → 2/3. Text 1/2, chart 1/1.
    assert (item.sentences, item.sentences_recalled, item.charts, item.charts_recalled) == (2, 1, 1, 1)
    assert item.recall == pytest.approx(2 / 3)
    assert (item.text_recall, item.chart_recall, item.complete) == (0.5, 1.0, False)
    assert scores.recall == pytest.approx(2 / 3) and scores.complete == 0.0


def test_sentences_are_found_inside_multi_sentence_passages(chunks: dict[str, str]) -> None:
    # Chunk 04_06 holds two sentences separated by a blank line; the reference is the second one.
    second = (
        "Of the major U.S. religious groups, White evangelicals (57%) have the most confidence in Netanyahu"
    )
    reference = MultimodalEvidence(texts=[second + " to handle world affairs."])
    retrieved = MultimodalEvidence(texts=[chunks["paragraph_00247_04_06"]])
    scores = multimodal_recall({"q": retrieved}, {"q": reference})
    assert scores.recall == 1.0 and scores.complete == 1.0
    assert scores.chart_recall is None  # no chart reference


def test_sentence_matching_ignores_typography_but_not_word_boundaries(chunks: dict[str, str]) -> None:
    # The corpus writes "it’s" (U+2019); a reference with a straight apostrophe and other spacing matches.
    straight = (
        "Two-thirds of Israelis think Islamophobia is common around the world today,  with around a third"
    )
    reference = MultimodalEvidence(texts=[straight + " (34%) saying it's very common."])
    retrieved = MultimodalEvidence(texts=[chunks["paragraph_00115_05_01"]])
    assert multimodal_recall({"q": retrieved}, {"q": reference}).recall == 1.0
    # "Yes." is inside "eyes" as letters but not as a word.
    assert (
        multimodal_recall(
            {"q": MultimodalEvidence(texts=["The eyes have it."])}, {"q": MultimodalEvidence(texts=["Yes."])}
        ).recall
        == 0.0
    )


def test_charts_match_exactly() -> None:
    reference = MultimodalEvidence(charts=["chart_1.png", "chart_2.png"])
    retrieved = MultimodalEvidence(charts=["Chart_1.png", "chart_2.png", "chart_3.png"])
    scores = multimodal_recall({"q": retrieved}, {"q": reference})
    assert scores.recall == 0.5 and scores.text_recall is None and scores.chart_recall == 0.5


def test_means_over_items(chunks: dict[str, str]) -> None:
    references = {
        "text-only": MultimodalEvidence(
            texts=[chunks["paragraph_00247_04_01"], chunks["paragraph_00247_04_02"]]
        ),
        "chart-only": MultimodalEvidence(charts=["c.png"]),
    }
    retrieved = {
        "text-only": MultimodalEvidence(texts=[chunks["paragraph_00247_04_02"]]),
        "chart-only": MultimodalEvidence(charts=["c.png"], texts=[chunks["paragraph_00247_04_01"]]),
    }
    scores = multimodal_recall(retrieved, references)
    # text-only: 1 of 2 sentences → 0.5; chart-only: 1 of 1 → 1. Recall (0.5 + 1)/2.
    # Text recall only over text-only (0.5); chart recall only over chart-only (1); complete 1 of 2.
    assert (scores.recall, scores.text_recall, scores.chart_recall, scores.complete) == (0.75, 0.5, 1.0, 0.5)
    report = scores.as_dict()
    assert report["items"] == 2 and [item["item"] for item in report["per_item"]] == [
        "chart-only",
        "text-only",
    ]


def test_repeated_reference_sentences_count_once(chunks: dict[str, str]) -> None:
    sentence = chunks["paragraph_00247_04_02"]
    scores = multimodal_recall(
        {"q": MultimodalEvidence(texts=[sentence])},
        {"q": MultimodalEvidence(texts=[sentence, sentence.upper()])},
    )
    assert scores.per_item[0].sentences == 1 and scores.recall == 1.0


def test_multimodal_bad_input() -> None:
    with pytest.raises(MetricInputError) as caught:
        multimodal_recall(
            {"a": MultimodalEvidence(), "b": MultimodalEvidence(texts=["x"])},
            {"a": MultimodalEvidence(charts=["c.png"]), "b": MultimodalEvidence(texts=["..."])},
        )
    message = str(caught.value)
    assert "1 items with nothing retrieved (e.g. a)" in message
    assert "1 references with neither text nor a chart (e.g. b)" in message
    with pytest.raises(MetricInputError, match="references without a prediction"):
        multimodal_recall({}, {"a": MultimodalEvidence(charts=["c.png"])})
    with pytest.raises(MetricInputError, match="empty item sets"):
        multimodal_recall({}, {})
