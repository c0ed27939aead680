"""Character 3-gram recall, and how a score spreads across languages (Futurepedia's AVG, VAR, entropy).

Reference definition
--------------------
Chirkova et al. (2024), "Retrieval-augmented generation in multilingual settings" (arXiv 2407.01463),
score multilingual answers by *character 3-gram recall*: the share of the reference's character
3-grams found in the answer, which tolerates the spelling variants of transliterated names that
sink exact match. Their code, naver/bergen ``modules/metrics.py``, computes it as
``f1_single(prediction, reference, tokenfun=ngrams)`` and reports the recall as
``Recall_char3gram``:

- ``ngrams()`` lower-cases the text, turns ASCII punctuation (``string.punctuation``) into spaces
  and splits on whitespace; a word shorter than 3 characters is one unit, a longer word gives its
  overlapping 3-grams ("paris" -> par, ari, ris);
- units are counted as a multiset (``Counter`` intersection): a unit the reference has twice must
  appear twice in the answer; recall = matched units / reference units, 0 when nothing matches;
- with several references the item scores the maximum over references; items are averaged.

Futurepedia (Wu et al. 2024, "Not All Languages are Equal", arXiv 2410.21970) reports this recall
per language over its eight languages (en, fr, es, pt, zh, ja, ko, ar), their average (AVG) and
variance (VAR), and, for multilingual knowledge selection, the entropy of the per-language recalls
normalised into a distribution (:func:`across_languages`).

Modes
-----
``bergen-2024-06``
    BERGEN as published with the paper (June 2024): ``ngrams()`` on the raw texts, no other
    normalisation. The stored history of ``modules/metrics.py`` lacks this version; the mode is the
    later code with the ``normalize()`` call taken out of ``f1_single``, the only change between
    the two versions as they are described.
``bergen-2024-09``
    BERGEN with normalisation (September 2024 on; stored commits 3ae59f3 and 13fbd28):
    ``f1_single`` first applies the SQuAD ``normalize()`` — lower-case, *delete* ASCII
    punctuation, remove the English articles a/an/the (``regex`` word boundaries), collapse
    whitespace — then ``ngrams()``.
``default``
    Our corrected version; it differs from both parity modes in these ways:

    1. *Scripts written without spaces.* BERGEN splits on whitespace only, so a Chinese, Japanese
       or Thai sentence is one "word". A one- or two-character answer is a whole-word unit and is
       never found inside such a sentence: "东京" scores 0 against "答案是东京。" and even against
       "东京。". Hangul has the same problem, because particles are written onto the noun
       ("서울" inside "서울에서"). We cut words where the script changes between these scripts
       (Han, kana, Hangul, Thai, Lao, Khmer, Myanmar, Tibetan) and the rest, and in the
       prediction's runs of these scripts we also count every 1- and 2-character substring, so a
       short answer unit is found wherever it is written. The script is read per character, not
       from the language code, so a Latin name or a number inside a Chinese answer is found too.
    2. *Unicode, not ASCII.* NFKC (full-width "４２" is "42"), case folding, and removal of optional
       marks (Arabic harakat and tatweel, Hebrew points, zero-width joiners: see
       :func:`m4build.text.tokenize.normalize_for_search`); every character that is not a letter,
       mark or digit — all Unicode punctuation (P*), symbols, spaces — separates words. BERGEN
       keeps «», 。, ، and ¿ inside words, so "«42»" does not contain the unit "42".
    3. *Punctuation separates, it is never deleted.* ``bergen-2024-09`` deletes it, so
       "Jean-Paul" becomes "jeanpaul" with units (anp, npa) that a correct "Jean Paul" lacks.
    4. *English articles only for English.* ``bergen-2024-09`` removes a/an/the in every language
       (and a reference "A" becomes empty and scores 0). We drop them from English references
       only, and keep them when nothing else is left.
    5. *Reasoning is not the answer.* Recall rewards long predictions, and a ``<think>`` block that
       weighs several candidates would be credited for all of them. The reasoning block is
       removed first (:func:`m4build.text.reasoning.strip_reasoning`); a model cut off while
       thinking gave no answer: it scores 0 and is counted in ``no_answer``.
    6. *Bad input is refused* (all modes): missing or empty predictions, references given as one
       string, empty references, unknown languages, ids that do not match. In ``default`` an item
       whose references all normalise to nothing is refused too; the parity modes score it 0, as
       BERGEN does.

    Units, the multiset count, the maximum over references and the mean over items are BERGEN's.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import regex

from m4build.errors import UsageError
from m4build.metrics.checks import InputProblems, MetricInputError, check_same_ids, is_missing_number
from m4build.text.reasoning import strip_reasoning
from m4build.text.tokenize import normalize_for_search

Char3gramMode = Literal["default", "bergen-2024-06", "bergen-2024-09"]
CHAR3GRAM_MODES: tuple[str, ...] = ("default", "bergen-2024-06", "bergen-2024-09")

N = 3
_WHAT = "character 3-gram recall"
_HINT = (
    "give every item a non-empty prediction (text), a list of non-empty reference strings and a "
    "language code such as 'en' or 'zh_cn', all under the same item ids"
)

# --- BERGEN (parity) ------------------------------------------------------------------------------

_ASCII_PUNCTUATION = frozenset(string.punctuation)
# BERGEN uses the `regex` module, whose \b counts combining marks as word characters (`re` does not).
_BERGEN_ARTICLES = regex.compile(r"\b(a|an|the)\b")


def _bergen_normalize(text: str) -> str:
    """BERGEN's SQuAD ``normalize()``: lower, delete ASCII punctuation, drop a/an/the, collapse spaces."""
    kept = "".join(ch for ch in text.lower() if ch not in _ASCII_PUNCTUATION)
    return " ".join(_BERGEN_ARTICLES.sub(" ", kept).split())


def _bergen_units(text: str) -> Counter[str]:
    """BERGEN's ``ngrams()``: lower, ASCII punctuation to spaces, units of each whitespace word."""
    spaced = "".join(" " if ch in _ASCII_PUNCTUATION else ch for ch in text.lower())
    return Counter(unit for word in spaced.split() for unit in _word_units(word))


def _bergen_recall(prediction: str, references: Sequence[str], normalized: bool) -> float:
    """The item's recall as ``f1_score(..., ngrams)["recall"]`` computes it: max over references."""
    prepare = _bergen_normalize if normalized else str
    answer = _bergen_units(prepare(prediction))
    return max(_clipped_recall(_bergen_units(prepare(reference)), answer) for reference in references)


# --- shared definition ----------------------------------------------------------------------------


def _word_units(word: str) -> list[str]:
    """A word shorter than N characters is one unit; a longer one gives its overlapping N-grams."""
    if len(word) < N:
        return [word]
    return [word[i : i + N] for i in range(len(word) - N + 1)]


def _clipped_recall(reference: Counter[str], answer: Counter[str]) -> float:
    """Share of the reference's units (as a multiset) that the answer has; 0 for an empty reference."""
    total = sum(reference.values())
    if total == 0:
        return 0.0
    return sum((reference & answer).values()) / total


# --- default --------------------------------------------------------------------------------------

# Scripts written without spaces between words (and Hangul, whose particles attach to the noun).
_NO_SPACE_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul jamo
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3038, 0x303B),
    (0x3041, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul jamo extended-A
    (0xA9E0, 0xA9FF),  # Myanmar extended-B
    (0xAA60, 0xAA7F),  # Myanmar extended-A
    (0xAC00, 0xD7FF),  # Hangul syllables, jamo extended-B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x1AFF0, 0x1B16F),  # kana supplements
    (0x20000, 0x3FFFF),  # CJK extensions B onwards
)
_NO_SPACE = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _NO_SPACE_RANGES)
# After folding, text is words separated by spaces; a match is a no-space run or another segment.
_SEGMENT = re.compile(f"([{_NO_SPACE}]+)|([^{_NO_SPACE}\\s]+)")
_ENGLISH = frozenset({"en", "eng"})
_ENGLISH_ARTICLES = frozenset({"a", "an", "the"})
_LANGUAGE_TAG = re.compile(r"[a-z]{2,3}(_[a-z0-9]{1,8})*")


class _Separators(dict[int, str | int]):
    """``str.translate`` table, filled on first sight of each code point: whatever is not a letter,
    mark or digit (punctuation, symbols, spaces, controls) becomes a space."""

    def __missing__(self, codepoint: int) -> str | int:
        kept: str | int = codepoint if unicodedata.category(chr(codepoint))[0] in "LMN" else " "
        self[codepoint] = kept
        return kept


_SEPARATORS = _Separators()


def _fold(text: str) -> str:
    """NFKC, casefold, optional marks removed, everything but letters, marks and digits a space."""
    return normalize_for_search(text).translate(_SEPARATORS)


def _reference_units(reference: str, english: bool) -> Counter[str]:
    """Units of a reference: a no-space run or another word segment is cut like a BERGEN word."""
    words = _fold(reference).split()
    if english:
        words = [word for word in words if word not in _ENGLISH_ARTICLES] or words
    units: Counter[str] = Counter()
    for run, segment in _SEGMENT.findall(" ".join(words)):
        units.update(_word_units(run or segment))
    return units


def _prediction_units(prediction: str) -> Counter[str]:
    """Units an answer offers: word units, plus every 1- to N-character substring of no-space runs.

    The substrings are what lets a one- or two-character reference unit (东京, 서울) be found inside
    a sentence; they can never match a unit of a spaced script, whose characters differ.
    """
    units: Counter[str] = Counter()
    for run, segment in _SEGMENT.findall(_fold(prediction)):
        if run:
            units.update(run[i : i + size] for size in range(1, N + 1) for i in range(len(run) - size + 1))
        else:
            units.update(_word_units(segment))
    return units


def _default_recall(answer: str, references: Sequence[str], english: bool) -> float | None:
    """The item's recall, max over references that have units; None when none has any."""
    scorable = [units for units in (_reference_units(ref, english) for ref in references) if units]
    if not scorable:
        return None
    offered = _prediction_units(answer)
    return max(_clipped_recall(units, offered) for units in scorable)


# --- checks ---------------------------------------------------------------------------------------


def _check_mode(mode: str) -> None:
    if mode not in CHAR3GRAM_MODES:
        raise UsageError(
            f"unknown character 3-gram recall mode {mode!r}",
            hint="choose one of: " + ", ".join(CHAR3GRAM_MODES),
        )


def _language_code(language: object) -> str | None:
    """``"zh-CN"``, ``"ZH_cn"`` and ``" zh_cn"`` all mean ``zh_cn``; None for anything not a language tag."""
    if not isinstance(language, str):
        return None
    code = language.strip().lower().replace("-", "_")
    return code if _LANGUAGE_TAG.fullmatch(code) else None


def _is_english(code: str) -> bool:
    return code.split("_", 1)[0] in _ENGLISH


def _check_item(
    problems: InputProblems, item_id: str, prediction: object, references: object, language: object
) -> bool:
    """Record what is wrong with one item; True when it can be scored."""
    before = dict(problems.counts)
    if is_missing_number(prediction) or not isinstance(prediction, str):
        problems.add("missing predictions", f"{item_id}: {prediction!r:.40}")
    elif not prediction.strip():
        problems.add("empty predictions", item_id)
    if isinstance(references, str):
        problems.add("references given as one string, not a list", f"{item_id}: {references!r:.40}")
    elif not isinstance(references, Sequence) or not references:
        problems.add("items without references", item_id)
    elif any(not isinstance(ref, str) or not ref.strip() for ref in references):
        problems.add("missing or empty references", f"{item_id}: {list(references)!r:.60}")
    if is_missing_number(language):
        problems.add("items without a language", item_id)
    elif _language_code(language) is None:
        problems.add("unknown languages", f"{item_id}: {language!r:.30}")
    return problems.counts == before


def _score(prediction: str, references: Sequence[str], code: str, mode: str) -> tuple[float | None, bool]:
    """(recall or None when no reference has units, whether the model gave no answer)."""
    if mode == "bergen-2024-06":
        return _bergen_recall(prediction, references, normalized=False), False
    if mode == "bergen-2024-09":
        return _bergen_recall(prediction, references, normalized=True), False
    answer = strip_reasoning(prediction)
    if not answer:
        return 0.0, True
    return _default_recall(answer, references, _is_english(code)), False


# --- public API -----------------------------------------------------------------------------------


def char3gram_recall(
    prediction: str, references: Sequence[str], *, language: str, mode: Char3gramMode = "default"
) -> float:
    """Character 3-gram recall of one answer against its references (the best reference counts).

    ``language`` is the item's language code (``"en"``, ``"zh-CN"``; anything that is not such a
    tag is an unknown language); in ``default`` mode it decides whether English articles are
    dropped. See the module docstring for what each ``mode`` computes. Raises
    ``MetricInputError`` for input that cannot be scored.
    """
    _check_mode(mode)
    problems = InputProblems(_WHAT)
    _check_item(problems, "the item", prediction, references, language)
    problems.raise_if_any(_HINT)
    recall, _ = _score(prediction, references, _language_code(language) or "", mode)
    if recall is None:
        raise MetricInputError(
            f"Cannot score {_WHAT}: no reference has a letter or digit ({list(references)!r:.60}).",
            "a reference needs at least one letter or digit to be matched",
        )
    return recall


@dataclass(frozen=True)
class Char3gramResult:
    """Corpus character 3-gram recall: over all items, per language, and per item.

    ``recall`` is the mean over all items; ``by_language`` the mean within each language (feed it
    to :func:`across_languages` for Futurepedia's AVG, VAR and entropy). ``no_answer`` counts
    predictions that held only reasoning (``default`` mode), which scored 0.
    """

    mode: str
    recall: float
    by_language: dict[str, float]
    items_by_language: dict[str, int]
    no_answer: int
    per_item: dict[str, float]

    def as_dict(self) -> dict[str, object]:
        return {
            "metric": "char3gram_recall",
            "mode": self.mode,
            "recall": self.recall,
            "by_language": dict(self.by_language),
            "items_by_language": dict(self.items_by_language),
            "no_answer": self.no_answer,
            "per_item": dict(self.per_item),
        }


def corpus_char3gram_recall(
    predictions: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    languages: Mapping[str, str],
    *,
    mode: Char3gramMode = "default",
) -> Char3gramResult:
    """Character 3-gram recall of a corpus, keyed by item id, grouped by each item's language.

    All three mappings must cover the same ids. Every problem in the input is reported at once in
    one ``MetricInputError`` (counts and examples), before anything is scored.
    """
    _check_mode(mode)
    check_same_ids(_WHAT, predictions.keys(), references.keys(), _HINT)
    problems = InputProblems(_WHAT)
    if not references:
        problems.add("items (none given)", "an empty corpus")
    for extra in sorted(set(languages) - set(references)):
        problems.add("languages for items that have no reference", extra)
    for item_id in sorted(references):
        _check_item(problems, item_id, predictions[item_id], references[item_id], languages.get(item_id))
    problems.raise_if_any(_HINT)

    per_item: dict[str, float] = {}
    item_language: dict[str, str] = {}
    no_answer = 0
    for item_id in sorted(references):
        code = _language_code(languages[item_id]) or ""
        recall, gave_nothing = _score(predictions[item_id], references[item_id], code, mode)
        no_answer += gave_nothing
        if recall is None:
            problems.add("items whose references have no letters or digits", item_id)
            continue
        per_item[item_id] = recall
        item_language[item_id] = code
    problems.raise_if_any(
        "a reference needs at least one letter or digit to be matched; fix or drop these items"
    )

    grouped: dict[str, list[float]] = {}
    for item_id, recall in per_item.items():
        grouped.setdefault(item_language[item_id], []).append(recall)
    return Char3gramResult(
        mode=mode,
        recall=math.fsum(per_item.values()) / len(per_item),
        by_language={code: math.fsum(scores) / len(scores) for code, scores in sorted(grouped.items())},
        items_by_language={code: len(scores) for code, scores in sorted(grouped.items())},
        no_answer=no_answer,
        per_item=per_item,
    )


@dataclass(frozen=True)
class CrossLanguageSummary:
    """How one score spreads across languages (Futurepedia's AVG, VAR and Selection Entropy).

    ``variance`` is the population variance (divided by the number of languages): the languages
    scored are all the languages of interest, not a sample of them. ``selection_shares`` are the
    scores normalised to sum to 1 — in multilingual knowledge selection, how often the model took
    each language's answer — and ``selection_entropy`` their Shannon entropy in ``log_base`` units
    (bits by default; 3 bits is no language preference among 8 languages). Futurepedia's paper could
    not be read offline to confirm its variance and log base, so both choices are ours; the
    ``normalized_selection_entropy`` (entropy / log of the number of languages, in [0, 1]) does not
    depend on the base. Shares and entropies are None when every score is 0 (nothing was selected);
    the normalised entropy also for a single language.
    """

    languages: tuple[str, ...]
    average: float
    variance: float
    selection_shares: dict[str, float] | None
    selection_entropy: float | None
    normalized_selection_entropy: float | None
    log_base: float

    def as_dict(self) -> dict[str, object]:
        return {
            "languages": list(self.languages),
            "average": self.average,
            "variance": self.variance,
            "selection_shares": None if self.selection_shares is None else dict(self.selection_shares),
            "selection_entropy": self.selection_entropy,
            "normalized_selection_entropy": self.normalized_selection_entropy,
            "log_base": self.log_base,
        }


def across_languages(
    per_language_scores: Mapping[str, float], *, log_base: float = 2.0
) -> CrossLanguageSummary:
    """AVG, VAR and Selection Entropy of per-language scores (e.g. ``Char3gramResult.by_language``).

    Scores must be non-negative finite numbers, one per language code; the scale (fractions or
    percentages) carries over to the average and variance and cancels out of the entropy.
    """
    if not (log_base > 0 and log_base != 1):
        raise UsageError(
            f"log_base must be positive and not 1, got {log_base!r}", hint="use 2 (bits) or math.e (nats)"
        )
    problems = InputProblems("the cross-language summary")
    if not per_language_scores:
        problems.add("languages (none given)", "an empty mapping")
    scores: dict[str, float] = {}
    for language, score in per_language_scores.items():
        code = _language_code(language)
        if code is None:
            problems.add("unknown languages", repr(language))
        elif code in scores:
            problems.add("languages given twice", repr(language))
        if is_missing_number(score):
            problems.add("missing scores", f"{language}: {score!r}")
        elif isinstance(score, bool) or not isinstance(score, int | float):
            problems.add("scores that are not numbers", f"{language}: {score!r:.30}")
        elif score < 0 or math.isinf(score):
            problems.add("negative or infinite scores", f"{language}: {score!r}")
        elif code is not None:
            scores[code] = float(score)
    problems.raise_if_any("pass one non-negative score per language code, e.g. {'en': 0.71, 'zh': 0.64}")

    languages = tuple(sorted(scores))
    values = [scores[code] for code in languages]
    average = math.fsum(values) / len(values)
    variance = math.fsum((value - average) ** 2 for value in values) / len(values)
    total = math.fsum(values)
    if total == 0:
        return CrossLanguageSummary(languages, average, variance, None, None, None, log_base)
    shares = {code: scores[code] / total for code in languages}
    # abs(): the sum is <= 0 term by term, and a single share of 1 would otherwise give -0.0.
    entropy = abs(math.fsum(p * math.log(p, log_base) for p in shares.values() if p > 0))
    normalized = entropy / math.log(len(languages), log_base) if len(languages) > 1 else None
    return CrossLanguageSummary(languages, average, variance, shares, entropy, normalized, log_base)
