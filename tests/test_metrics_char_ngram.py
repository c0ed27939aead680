"""Character 3-gram recall (BERGEN parity modes and our default) and the cross-language summary.

Worked examples list the 3-gram units by hand: a word shorter than 3 characters is one unit,
a longer word gives its overlapping 3-grams; recall = reference units found / reference units.
"""

from __future__ import annotations

import json
import math

import pytest

from m4build.errors import UsageError
from m4build.metrics.char_ngram import (
    CHAR3GRAM_MODES,
    across_languages,
    char3gram_recall,
    corpus_char3gram_recall,
)
from m4build.metrics.checks import MetricInputError

PARITY = ("bergen-2024-06", "bergen-2024-09")


# --- worked examples, every mode -------------------------------------------------------------------


@pytest.mark.parametrize("mode", CHAR3GRAM_MODES)
def test_reference_found_in_a_sentence(mode):
    # reference units par, ari, ris; all three are in "it is paris" -> 3/3
    assert char3gram_recall("It is Paris.", ["Paris"], language="en", mode=mode) == 1.0


@pytest.mark.parametrize("mode", CHAR3GRAM_MODES)
def test_spelling_variant_earns_partial_credit(mode):
    # westphalia: wes est stp tph pha hal ali lia (8); westfalen: wes est stf tfa fal ale len
    # shared: wes, est -> 2/8
    assert char3gram_recall("Westfalen", ["Westphalia"], language="de", mode=mode) == 0.25


@pytest.mark.parametrize("mode", CHAR3GRAM_MODES)
def test_short_words_are_whole_units(mode):
    # "42" is one unit: it is not inside the word "1942" (units 194, 942) but is the word "42"
    assert char3gram_recall("In 1942.", ["42"], language="en", mode=mode) == 0.0
    assert char3gram_recall("It is 42.", ["42"], language="en", mode=mode) == 1.0


@pytest.mark.parametrize("mode", CHAR3GRAM_MODES)
def test_best_reference_counts(mode):
    # lyon: 0/3, paris: 3/3 -> max 1.0
    assert char3gram_recall("Paris", ["Lyon", "Paris"], language="fr", mode=mode) == 1.0


def test_units_are_counted_as_a_multiset_and_2024_09_deletes_the_hyphen():
    # default and 2024-06: "baden-baden" -> baden baden -> bad ade den bad ade den (6);
    # "baden" offers each once -> 3/6
    assert char3gram_recall("Baden", ["Baden-Baden"], language="de") == 0.5
    assert char3gram_recall("Baden", ["Baden-Baden"], language="de", mode="bergen-2024-06") == 0.5
    # 2024-09 deletes "-": "badenbaden" -> bad ade den enb nba bad ade den (8); found 3 -> 3/8
    assert char3gram_recall("Baden", ["Baden-Baden"], language="de", mode="bergen-2024-09") == 0.375


def test_2024_09_joins_hyphenated_names():
    answer, references = "Jean Paul Sartre", ["Jean-Paul Sartre"]
    # 2024-09: "jeanpaul sartre" -> jea ean anp npa pau aul sar art rtr tre (10);
    # "jean paul sartre" lacks anp, npa -> 8/10
    assert char3gram_recall(answer, references, language="fr", mode="bergen-2024-09") == 0.8
    # 2024-06 and default turn "-" into a space: jea ean pau aul sar art rtr tre, all found
    assert char3gram_recall(answer, references, language="fr", mode="bergen-2024-06") == 1.0
    assert char3gram_recall(answer, references, language="fr") == 1.0


# --- the parity modes' flaws, and what the default does instead --------------------------------------


@pytest.mark.parametrize(
    ("prediction", "reference", "language"),
    [
        ("答案是东京。", "东京", "zh"),  # two Han characters inside a sentence
        ("东京。", "东京", "zh"),  # even the bare answer with a full stop
        ("京都です", "京都", "ja"),
        ("서울에서 열렸다", "서울", "ko"),  # a particle written onto the noun
        ("答案是４２。", "42", "zh"),  # full-width digits inside Han text
        ("Réponse : «42».", "42", "fr"),  # guillemets are not ASCII punctuation
    ],
)
def test_short_answer_inside_unspaced_or_unicode_punctuated_text(prediction, reference, language):
    # BERGEN's only unit for the reference is the whole short word, and the prediction has no
    # such whitespace word (e.g. "东京。" gives the single 3-gram "东京。") -> 0
    for mode in PARITY:
        assert char3gram_recall(prediction, [reference], language=language, mode=mode) == 0.0
    # default: script runs and Unicode punctuation separate, and 1-2 character substrings of
    # unspaced runs are offered -> the one reference unit is found -> 1/1
    assert char3gram_recall(prediction, [reference], language=language) == 1.0


def test_longer_unspaced_answers_use_3grams_in_every_mode():
    # 北京大学: 北京大, 京大学 (2); both inside 答案是北京大学。 -> 2/2
    for mode in CHAR3GRAM_MODES:
        assert char3gram_recall("答案是北京大学。", ["北京大学"], language="zh", mode=mode) == 1.0


def test_case_folding_and_arabic_marks():
    # default casefolds: straße -> strasse on both sides -> 1.0; BERGEN lower()s only:
    # str tra raß aße (4) vs str tra ras ass sse -> 2/4
    assert char3gram_recall("STRASSE", ["Straße"], language="de") == 1.0
    assert char3gram_recall("STRASSE", ["Straße"], language="de", mode="bergen-2024-06") == 0.5
    # vowel marks written in the reference only: the default removes harakat, BERGEN's 3-grams
    # of code points (م ُ ح َ م ّ َ د) share nothing with محم, حمد
    assert char3gram_recall("محمد", ["مُحَمَّد"], language="ar") == 1.0
    assert char3gram_recall("محمد", ["مُحَمَّد"], language="ar", mode="bergen-2024-06") == 0.0


def test_english_articles_only_for_english():
    # "the beatles": 2024-06 keeps the unit "the" (6 units; "Beatles" offers 5) -> 5/6
    assert char3gram_recall("Beatles", ["The Beatles"], language="en", mode="bergen-2024-06") == 5 / 6
    # 2024-09 removes the article in every language -> bea eat atl tle les, all found
    assert char3gram_recall("Beatles", ["The Beatles"], language="fr", mode="bergen-2024-09") == 1.0
    # default: removed for English, kept for French
    assert char3gram_recall("Beatles", ["The Beatles"], language="en") == 1.0
    assert char3gram_recall("Beatles", ["The Beatles"], language="fr") == 5 / 6


def test_a_reference_that_is_only_an_article():
    # blood type "A": 2024-09 normalises the reference to "" -> no units -> 0 whatever the answer
    assert char3gram_recall("Blood type A.", ["A"], language="en", mode="bergen-2024-09") == 0.0
    # 2024-06 and default keep the unit "a", which the answer has -> 1/1
    assert char3gram_recall("Blood type A.", ["A"], language="en", mode="bergen-2024-06") == 1.0
    assert char3gram_recall("Blood type A.", ["A"], language="en") == 1.0


def test_reasoning_is_not_scored_by_default():
    prediction = "<think>Is it Paris or Lyon? Lyon.</think>Lyon"
    # BERGEN scores the raw text, thinking included: par ari ris are there -> 1.0
    for mode in PARITY:
        assert char3gram_recall(prediction, ["Paris"], language="fr", mode=mode) == 1.0
    # default scores the answer "Lyon" only -> 0/3
    assert char3gram_recall(prediction, ["Paris"], language="fr") == 0.0


def test_reference_without_letters():
    # parity: an empty unit list scores 0 (BERGEN's num_same == 0); default refuses the item
    assert char3gram_recall("Paris", ["—"], language="fr", mode="bergen-2024-06") == 0.0
    with pytest.raises(MetricInputError, match="no reference has a letter or digit"):
        char3gram_recall("Paris", ["—"], language="fr")
    # another reference with letters is enough
    assert char3gram_recall("Paris", ["—", "Paris"], language="fr") == 1.0


# --- corpus ----------------------------------------------------------------------------------------


def test_corpus_by_language_and_no_answer():
    predictions = {
        "en1": "It is Paris.",  # 1.0
        "en2": "Baden",  # Baden-Baden: 3/6 = 0.5
        "zh1": "答案是东京。",  # 1.0
        "zh2": "<think>东京还是大阪",  # cut off while thinking: no answer, 0.0
    }
    references = {"en1": ["Paris"], "en2": ["Baden-Baden"], "zh1": ["东京"], "zh2": ["东京"]}
    languages = {"en1": "en", "en2": "EN", "zh1": "zh-CN", "zh2": "zh_cn"}
    result = corpus_char3gram_recall(predictions, references, languages)
    # all items: (1 + 0.5 + 1 + 0) / 4 = 0.625; en: 1.5 / 2; zh_cn: 1 / 2
    assert result.recall == 0.625
    assert result.by_language == {"en": 0.75, "zh_cn": 0.5}
    assert result.items_by_language == {"en": 2, "zh_cn": 2}
    assert result.no_answer == 1
    assert result.per_item == {"en1": 1.0, "en2": 0.5, "zh1": 1.0, "zh2": 0.0}
    report = json.loads(json.dumps(result.as_dict()))
    assert report["mode"] == "default" and report["by_language"]["en"] == 0.75

    parity = corpus_char3gram_recall(predictions, references, languages, mode="bergen-2024-06")
    # zh1 scores 0 in BERGEN, zh2 (raw thinking text 东京还是大阪) also 0 -> zh_cn 0.0
    assert parity.by_language == {"en": 0.75, "zh_cn": 0.0}
    assert parity.no_answer == 0


def test_corpus_reports_every_problem_at_once():
    predictions = {"a": "", "b": None, "c": float("nan"), "d": "Paris", "e": "Paris", "f": "Paris"}
    references = {"a": ["x"], "b": ["x"], "c": ["x"], "d": "Paris", "e": [], "f": ["Paris", ""]}
    languages = {"a": "en", "b": "en", "c": "en", "d": "English", "e": "en"}
    with pytest.raises(MetricInputError) as caught:
        corpus_char3gram_recall(predictions, references, languages)
    message = str(caught.value)
    assert "1 empty predictions (e.g. a)" in message
    assert "2 missing predictions" in message
    assert "1 references given as one string, not a list" in message
    assert "1 items without references (e.g. e)" in message
    assert "1 missing or empty references" in message
    assert "1 unknown languages (e.g. d: 'English')" in message
    assert "1 items without a language (e.g. f)" in message
    assert "language code" in message  # the hint says how to fix it


def test_corpus_refuses_mismatched_ids_and_empty_input():
    with pytest.raises(MetricInputError, match="references without a prediction"):
        corpus_char3gram_recall({"a": "x"}, {"a": ["x"], "b": ["y"]}, {"a": "en", "b": "en"})
    with pytest.raises(MetricInputError, match="languages for items that have no reference"):
        corpus_char3gram_recall({"a": "x"}, {"a": ["x"]}, {"a": "en", "z": "en"})
    with pytest.raises(MetricInputError, match="none given"):
        corpus_char3gram_recall({}, {}, {})
    with pytest.raises(MetricInputError, match="no letters or digits"):
        corpus_char3gram_recall({"a": "x"}, {"a": ["…"]}, {"a": "en"})


def test_item_refuses_bad_input_and_unknown_modes():
    with pytest.raises(MetricInputError, match="empty predictions"):
        char3gram_recall("  ", ["Paris"], language="fr")
    with pytest.raises(MetricInputError, match="references given as one string"):
        char3gram_recall("Paris", "Paris", language="fr")  # type: ignore[arg-type]
    with pytest.raises(MetricInputError, match="unknown languages"):
        char3gram_recall("Paris", ["Paris"], language="french")
    with pytest.raises(UsageError, match="bergen-2024-06"):
        char3gram_recall("Paris", ["Paris"], language="fr", mode="bergen")  # type: ignore[arg-type]


# --- across languages ------------------------------------------------------------------------------


def test_across_languages_worked_example():
    summary = across_languages({"en": 0.5, "fr": 0.25, "zh": 0.25})
    # AVG = 1/3; VAR = ((1/2 - 1/3)^2 + 2 (1/4 - 1/3)^2) / 3 = (1/36 + 2/144) / 3 = 1/72
    assert summary.average == pytest.approx(1 / 3)
    assert summary.variance == pytest.approx(1 / 72)
    # shares 1/2, 1/4, 1/4; H = 1/2 * 1 + 2 * 1/4 * 2 = 1.5 bits; normalised 1.5 / log2(3)
    assert summary.selection_shares == {"en": 0.5, "fr": 0.25, "zh": 0.25}
    assert summary.selection_entropy == pytest.approx(1.5)
    assert summary.normalized_selection_entropy == pytest.approx(1.5 / math.log2(3))
    # the same entropy in nats: 1.5 ln 2; the normalised value does not depend on the base
    in_nats = across_languages({"en": 0.5, "fr": 0.25, "zh": 0.25}, log_base=math.e)
    assert in_nats.selection_entropy == pytest.approx(1.5 * math.log(2))
    assert in_nats.normalized_selection_entropy == pytest.approx(summary.normalized_selection_entropy)
    assert json.loads(json.dumps(summary.as_dict()))["languages"] == ["en", "fr", "zh"]


def test_across_languages_limits():
    eight = {code: 40.0 for code in ("en", "fr", "es", "pt", "zh", "ja", "ko", "ar")}
    uniform = across_languages(eight)  # percentages work: the scale cancels out of the entropy
    assert uniform.selection_entropy == pytest.approx(3.0)  # log2(8): no language preferred
    assert uniform.normalized_selection_entropy == pytest.approx(1.0)
    assert uniform.variance == 0.0
    one = across_languages({"en": 0.9})
    assert one.selection_entropy == 0.0 and one.normalized_selection_entropy is None
    nothing = across_languages({"en": 0.0, "fr": 0.0})
    assert nothing.selection_shares is None and nothing.selection_entropy is None


def test_across_languages_refuses_bad_scores():
    with pytest.raises(MetricInputError) as caught:
        across_languages({"en": float("nan"), "fr": -0.1, "English": 0.2, "de": "high"})
    message = str(caught.value)
    assert "missing scores" in message and "negative or infinite scores" in message
    assert "unknown languages" in message and "scores that are not numbers" in message
    with pytest.raises(MetricInputError, match="languages given twice"):
        across_languages({"en": 0.1, "EN": 0.2})
    with pytest.raises(MetricInputError, match="none given"):
        across_languages({})
    with pytest.raises(UsageError, match="log_base"):
        across_languages({"en": 0.1}, log_base=1)
