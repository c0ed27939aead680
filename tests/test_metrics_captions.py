"""COCO caption metrics: worked examples, the parity quirks, pycocoevalcap parity, bad input."""

from __future__ import annotations

import math
import random
import shutil

import pytest

from m4build.errors import UsageError
from m4build.metrics.captions import bleu, caption_scores, cider, cider_d, rouge_l
from m4build.metrics.checks import MetricInputError
from m4build.metrics.coco_tokenize import ptb_tokenize

# ---- tokenizer --------------------------------------------------------------------------------------

# Captions covering the cases the module docstring lists. Each expected output is the Java pipeline's
# (CoreNLP 3.4.1 through pycocoevalcap) without its bracket quirk; the parity mode is compared with
# Java itself in test_ptb_tokenize_matches_the_java_pipeline.
TOKENIZER_CASES = [
    ("A man (in a red shirt) rides a horse.", "a man in a red shirt rides a horse"),
    ("Don't stop: it's the dog's ball, isn't it?", "do n't stop it 's the dog 's ball is n't it"),
    ("He cannot go; she won't!", "he can not go she wo n't"),
    ("The U.S. flag at 10:30 costs $1,000.50", "the u.s. flag at 10:30 costs $ 1,000.50"),
    ("\u201cHello,\u201d she said\u2014twice\u2026", "hello she said twice"),
    (
        "Mr. Smith and/or Dr. Who at 5th Ave. in Jan. 2020",
        "mr. smith and/or dr. who at 5th ave. in jan. 2020",
    ),
    ("a 5-year-old boy at 3 o'clock, a Ph.D. and ma'am", "a 5-year-old boy at 3 o'clock a ph.d. and ma'am"),
    ('Two "quoted" words - and `more\' -- here...', "two quoted words and more here"),
    (
        "I'm gonna say y'all love rock'n'roll, 'tis true",
        "i 'm gon na say y' all love rock 'n' roll 't is true",
    ),
    ("Caf\u00e9 \u00bd off, \u20ac5 & 50% @home #1 #tag", "caf\u00e9 1/2 off $ 5 & 50 % @home # 1 #tag"),
    ("A man with a \U0001f600 emoji t-shirt", "a man with a emoji t-shirt"),
    ("Line one\nline two", "line one line two"),
]


@pytest.mark.parametrize(("text", "tokens"), TOKENIZER_CASES)
def test_ptb_tokenize_matches_coco_preprocessing(text: str, tokens: str) -> None:
    assert " ".join(ptb_tokenize(text)) == tokens


def test_java_quirks_are_kept_in_parity_only() -> None:
    # -lowerCase turns -LRB- into -lrb-, which COCO's upper-case removal list never matches, and "!?" is
    # one token the list does not name.
    text = "A dog [left] (running) {fast}!?"
    assert ptb_tokenize(text) == ["a", "dog", "left", "running", "fast"]
    assert ptb_tokenize(text, parity=True) == [
        "a", "dog", "-lsb-", "left", "-rsb-", "-lrb-", "running", "-rrb-", "-lcb-", "fast", "-rcb-", "!?",
    ]  # fmt: skip


@pytest.mark.skipif(shutil.which("java") is None, reason="the COCO tokenizer needs java")
def test_ptb_tokenize_matches_the_java_pipeline() -> None:
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    texts = [text for text, _ in TOKENIZER_CASES] + ["A dog [left] (running) {fast}!?"]
    java = PTBTokenizer().tokenize({str(index): [{"caption": text}] for index, text in enumerate(texts)})
    for index, text in enumerate(texts):
        assert " ".join(ptb_tokenize(text, parity=True)) == java[str(index)][0], text


# ---- BLEU -------------------------------------------------------------------------------------------

CAT = {"cat": "the cat sat on the mat"}
CAT_REFS = {"cat": ["the cat is on the mat", "there is a cat on the mat"]}


def test_bleu_worked_example() -> None:
    # Clipped matches / candidate n-grams: 1-grams 5/6 (the x2, cat, on, mat; not sat),
    # 2-grams 3/5 (the cat, on the, the mat), 3-grams 1/4 (on the mat), 4-grams 0/3.
    # Closest reference length to 6 is 6, so no brevity penalty.
    # BLEU-1 = 5/6; BLEU-2 = sqrt(5/6 * 3/5) = sqrt(1/2); BLEU-3 = (5/6 * 3/5 * 1/4)^(1/3) = 1/2.
    scores = bleu(CAT, CAT_REFS, tokenize=False)
    assert scores.scores[:3] == pytest.approx((5 / 6, math.sqrt(0.5), 0.5))
    assert scores.scores[3] == 0.0
    assert scores.brevity_penalty == 1.0
    assert (scores.candidate_length, scores.reference_length) == (6, 6)


def test_bleu_parity_keeps_cocos_epsilon_for_missing_matches() -> None:
    # COCO: (0 + 1e-15) / (3 + 1e-9) for the 4-grams, so BLEU-4 = (5/6 * 3/5 * 1/4 * 1e-15/3)^(1/4) ≈ 8.0e-5.
    scores = bleu(CAT, CAT_REFS, tokenize=False, mode="parity")
    assert scores.scores[3] == pytest.approx((0.125 * 1e-15 / 3) ** 0.25, rel=1e-6)
    assert scores.scores[:3] == pytest.approx((5 / 6, math.sqrt(0.5), 0.5))


def test_bleu_pools_counts_over_the_corpus_with_a_brevity_penalty() -> None:
    # Item "short": "a cat" vs "a cat on the mat": 1-grams 2/2, length 2 vs 5.
    # Corpus 1-grams: (5 + 2) / (6 + 2) = 7/8; lengths c = 8, r = 6 + 5 = 11;
    # BP = exp(1 - 11/8) = exp(-0.375) = 0.687289; BLEU-1 = 0.875 * 0.687289 = 0.601378.
    candidates = {**CAT, "short": "a cat"}
    references = {**CAT_REFS, "short": ["a cat on the mat"]}
    scores = bleu(candidates, references, tokenize=False)
    assert scores.brevity_penalty == pytest.approx(math.exp(-0.375))
    assert scores.scores[0] == pytest.approx(0.875 * math.exp(-0.375))
    # Per item, "short" has perfect precisions and BP = exp(1 - 5/2) = 0.223130.
    assert scores.per_item["short"][:2] == pytest.approx((math.exp(-1.5), math.exp(-1.5)))


def test_bleu_closest_reference_length_ties_go_to_the_shorter() -> None:
    # Candidate of 5 tokens, references of 4 and 6: both 1 away, 4 wins, so c >= r and BP = 1.
    scores = bleu({"x": "a b c d e"}, {"x": ["a b c d", "a b c d e f"]}, tokenize=False)
    assert scores.reference_length == 4
    assert scores.brevity_penalty == 1.0


# ---- ROUGE-L ----------------------------------------------------------------------------------------


def test_rouge_l_keeps_the_best_reference_where_coco_mixes_two() -> None:
    # LCS with "a b" = 2: P = 2/4, R = 2/2, F = 2.44 * 0.5 * 1 / (1 + 1.44 * 0.5) = 1.22/1.72 = 0.709302.
    # LCS with "a b c d e f g h" = 4: P = 1, R = 0.5, F = 2.44 * 0.5 / (0.5 + 1.44) = 1.22/1.94 = 0.628866.
    # COCO takes max P = 1 (second) and max R = 1 (first): F = 1.0, a perfect score for neither.
    candidates, references = {"x": "a b c d"}, {"x": ["a b", "a b c d e f g h"]}
    assert rouge_l(candidates, references, tokenize=False).score == pytest.approx(1.22 / 1.72)
    assert rouge_l(candidates, references, tokenize=False, mode="parity").score == 1.0


def test_rouge_l_parity_counts_empty_tokens_from_double_spaces() -> None:
    # split(" ") gives ["a", "", "b"]: LCS 2, P = 2/3, R = 1, F = 2.44 * (2/3) / (1 + 1.44 * 2/3) = 0.829932.
    candidates, references = {"x": "a  b"}, {"x": ["a b"]}
    assert rouge_l(candidates, references, tokenize=False, mode="parity").score == pytest.approx(
        2.44 * (2 / 3) / (1 + 1.44 * 2 / 3)
    )
    assert rouge_l(candidates, references, tokenize=False).score == 1.0


# ---- CIDEr-D and CIDEr ------------------------------------------------------------------------------

REPEAT = {"rep": "dog dog", "other": "cat"}
REPEAT_REFS = {"rep": ["dog"], "other": ["bird"]}


def test_cider_d_worked_example_clips_and_penalises_length() -> None:
    # Two items, so idf(dog) = idf(bird) = log 2 - log 1 = log 2; unseen n-grams ("cat", "dog dog") too.
    # "dog dog" vs "dog", unigrams: candidate weight 2 log2, reference log2; clipped dot = log2 * log2,
    # cosine = log2^2 / (2 log2 * log2) = 0.5; bigrams: the reference has none, so 0; orders 3, 4 empty.
    # Length penalty exp(-(2 - 1)^2 / 72) = 0.986207. Item: 10 * (0.5 * 0.986207) / 4 = 1.232759.
    # "cat" vs "bird": no shared n-gram, 0. Corpus mean: 0.616380.
    scores = cider_d(REPEAT, REPEAT_REFS, tokenize=False)
    assert scores.per_item["rep"] == pytest.approx(1.25 * math.exp(-1 / 72))
    assert scores.per_item["other"] == 0.0
    assert scores.score == pytest.approx(0.625 * math.exp(-1 / 72))


def test_plain_cider_rewards_repetition() -> None:
    # Unclipped dot = 2 log2 * log2, cosine = 1 and no length penalty: 10 * 1 / 4 = 2.5, as much as "dog".
    scores = cider(REPEAT, REPEAT_REFS, tokenize=False)
    assert scores.per_item["rep"] == pytest.approx(2.5)
    assert scores.score == pytest.approx(1.25)
    assert scores.variant == "CIDEr"


def test_cider_refuses_a_single_item() -> None:
    with pytest.raises(MetricInputError, match="single item"):
        cider_d({"x": "a dog"}, {"x": ["a dog"]})


# ---- the COCO set -----------------------------------------------------------------------------------


def test_caption_scores_tokenize_like_coco() -> None:
    # Case and punctuation disappear in COCO's preprocessing, so these captions match exactly.
    candidates = {"1": "A Dog runs, in the park!", "2": "Two cats (sleeping)."}
    references = {"1": ["a dog runs in the park"], "2": ["two cats sleeping"]}
    scores = caption_scores(candidates, references)
    summary = scores.as_dict()
    assert summary["BLEU-1"] == pytest.approx(1.0)
    assert summary["ROUGE-L"] == pytest.approx(1.0)
    assert set(summary) >= {"BLEU-4", "CIDEr-D", "items", "empty_candidates", "mode", "tokenized"}
    # In parity the "-lrb-" and "-rrb-" tokens stay and the second caption is no longer exact.
    assert caption_scores(candidates, references, mode="parity").rouge_l.per_item["2"] < 1.0


def test_empty_candidates_score_zero_and_are_counted() -> None:
    scores = caption_scores({"1": "...", "2": "a dog"}, {"1": ["a cat"], "2": ["a dog"]})
    assert scores.bleu.empty_candidates == 1
    assert scores.rouge_l.per_item["1"] == 0.0
    assert scores.cider_d.per_item["1"] == 0.0


def test_coco_list_form_of_candidates_is_accepted() -> None:
    assert rouge_l({"1": ["a dog"]}, {"1": ["a dog"]}).score == 1.0


# ---- parity with pycocoevalcap ----------------------------------------------------------------------

_VOCAB = ("a", "the", "dog", "cat", "man", "woman", "on", "in", "red", "runs", "sits", "park", "with", "ball")


def _parity_inputs() -> tuple[dict[str, str], dict[str, list[str]]]:
    """Tokenized captions: random ones (seeded), plus an empty candidate and a double space."""
    rng = random.Random(7)

    def sentence(shortest: int) -> str:
        return " ".join(rng.choice(_VOCAB) for _ in range(rng.randint(shortest, 12)))

    candidates = {f"item{index:02d}": sentence(1) for index in range(30)}
    references = {item: [sentence(3) for _ in range(rng.randint(1, 5))] for item in candidates}
    candidates["item00"] = ""
    candidates["item01"] = "a  dog runs in the park"
    references["item01"] = ["a dog runs in the park", "the dog runs"]
    return candidates, references


def test_bleu_rouge_cider_d_match_pycocoevalcap() -> None:
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    candidates, references = _parity_inputs()
    ids = list(references)
    coco_res = {item: [candidates[item]] for item in ids}

    coco_bleu, coco_bleu_items = Bleu(4).compute_score(references, coco_res, verbose=0)
    ours_bleu = bleu(candidates, references, tokenize=False, mode="parity")
    assert ours_bleu.scores == pytest.approx(tuple(coco_bleu), abs=1e-6)
    for order in range(4):
        assert [ours_bleu.per_item[item][order] for item in ids] == pytest.approx(
            coco_bleu_items[order], abs=1e-6
        )

    coco_rouge, coco_rouge_items = Rouge().compute_score(references, coco_res)
    ours_rouge = rouge_l(candidates, references, tokenize=False, mode="parity")
    assert ours_rouge.score == pytest.approx(coco_rouge, abs=1e-6)
    assert [ours_rouge.per_item[item] for item in ids] == pytest.approx(list(coco_rouge_items), abs=1e-6)

    coco_cider, coco_cider_items = Cider().compute_score(references, coco_res)
    for mode in ("parity", "default"):  # CIDEr-D has no mode difference on tokenized input
        ours_cider = cider_d(candidates, references, tokenize=False, mode=mode)
        assert ours_cider.score == pytest.approx(coco_cider, abs=1e-6)
        assert [ours_cider.per_item[item] for item in ids] == pytest.approx(list(coco_cider_items), abs=1e-6)


def test_tokenized_pipeline_matches_pycocoevalcap_on_our_tokens() -> None:
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    candidates = {"1": "A man (on a horse) rides.", "2": "Two dogs' toys, don't they?", "3": "A red bus."}
    references = {
        "1": ["A man rides a horse.", "Someone (a man) on a horse."],
        "2": ["The dogs' toys.", "Toys of two dogs"],
        "3": ["A red double-decker bus.", "A bus that is red"],
    }

    def coco_form(text: str) -> str:
        return " ".join(ptb_tokenize(text, parity=True))

    res = {item: [coco_form(text)] for item, text in candidates.items()}
    gts = {item: [coco_form(text) for text in texts] for item, texts in references.items()}
    scores = caption_scores(candidates, references, mode="parity")
    assert scores.rouge_l.score == pytest.approx(Rouge().compute_score(gts, res)[0], abs=1e-6)
    assert scores.cider_d.score == pytest.approx(Cider().compute_score(gts, res)[0], abs=1e-6)


@pytest.mark.skipif(shutil.which("java") is None, reason="the COCO tokenizer needs java")
def test_parity_mode_reproduces_the_whole_coco_pipeline() -> None:
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    candidates = {"1": "A man (on a horse) rides!!", "2": "Two dogs' toys, don't they?", "3": "A red bus."}
    references = {
        "1": ["A man rides a horse.", "Someone (a man) on a horse."],
        "2": ["The dogs' toys.", "Toys of two dogs"],
        "3": ["A red double-decker bus.", "A bus that is red"],
    }
    tokenizer = PTBTokenizer()
    res = tokenizer.tokenize({item: [{"caption": text}] for item, text in candidates.items()})
    gts = tokenizer.tokenize(
        {item: [{"caption": text} for text in texts] for item, texts in references.items()}
    )
    scores = caption_scores(candidates, references, mode="parity")
    assert scores.bleu.scores == pytest.approx(tuple(Bleu(4).compute_score(gts, res, verbose=0)[0]), abs=1e-6)
    assert scores.rouge_l.score == pytest.approx(Rouge().compute_score(gts, res)[0], abs=1e-6)
    assert scores.cider_d.score == pytest.approx(Cider().compute_score(gts, res)[0], abs=1e-6)


# ---- bad input --------------------------------------------------------------------------------------


def test_mismatched_ids_are_refused() -> None:
    with pytest.raises(MetricInputError, match="references without a prediction"):
        bleu({"1": "a dog"}, {"1": ["a dog"], "2": ["a cat"]})


@pytest.mark.parametrize(
    ("candidates", "references", "problem"),
    [
        ({"1": ["a dog", "a cat"]}, {"1": ["a dog"]}, "candidate lists without exactly one caption"),
        ({"1": []}, {"1": ["a dog"]}, "candidate lists without exactly one caption"),
        ({"1": None}, {"1": ["a dog"]}, "missing candidates"),
        ({"1": float("nan")}, {"1": ["a dog"]}, "missing candidates"),
        ({"1": 3}, {"1": ["a dog"]}, "candidates that are not text"),
        ({"1": "a dog"}, {"1": "a dog"}, "references not given as a list of captions"),
        ({"1": "a dog"}, {"1": []}, "ids without references"),
        ({"1": "a dog"}, {"1": ["a dog", None]}, "missing or non-text references"),
        ({"1": "a dog"}, {"1": ["  "]}, "empty references"),
        ({"1": "a dog"}, {"1": ["?!"]}, "references with no words after tokenization"),
        ({}, {}, "inputs without any item"),
    ],
)
def test_bad_caption_input_is_refused(candidates: dict, references: dict, problem: str) -> None:
    with pytest.raises(MetricInputError, match=problem):
        rouge_l(candidates, references)


def test_problems_are_counted_with_examples() -> None:
    with pytest.raises(MetricInputError) as error:
        bleu({"1": "a", "2": "b", "3": "c"}, {"1": [], "2": [], "3": ["c"]})
    assert "2 ids without references (e.g. 1, 2)" in str(error.value)


def test_unknown_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        bleu({"1": "a"}, {"1": ["a"]}, mode="coco")  # type: ignore[arg-type]
