"""Tokens for BM25 in every language m4build covers, with one rule set and no language flag.

Why this shape:

- **One function for all languages.** A query and the documents it searches must be tokenised the
  same way, and a corpus mixes scripts (Latin names inside Chinese text, Arabic inside English).
  So the rules depend on each character's script, never on a language code that may be wrong.
- **NFKC + casefold.** NFKC folds compatibility forms (full-width Latin, half-width katakana,
  Arabic presentation forms, ligatures) onto the characters people type; casefold is the
  Unicode-correct lower-casing ("Straße" and "STRASSE" meet, Greek final sigma matches sigma).
- **Optional invisible marks are removed.** Soft hyphens, zero-width (non-)joiners, word joiners,
  variation selectors, Arabic tatweel and vowel signs (harakat) and Hebrew points are written
  inconsistently — a query typed without them must still match a text that has them.
- **Scripts written without spaces become character bigrams.** Han, Hiragana/Katakana, Thai, Lao,
  Khmer, Myanmar and Tibetan text has no word boundaries to split on, and a dictionary segmenter
  per language (jieba, MeCab, PyThaiNLP, ...) is heavy, slow and disagrees with itself between
  query and document. Overlapping bigrams are the standard dictionary-free answer (Lucene's
  CJKBigramFilter, Elasticsearch's ``cjk`` analyzer): most words in these scripts are one or two
  characters long, so a bigram index matches words without knowing where they end. A run of one
  character is kept as a unigram so that it is not lost. A "character" here is a base character
  with its combining marks (and, in Khmer and Myanmar, the subscript consonant stacked under it),
  so a Thai tone mark or a vowel sign never becomes a token of its own.
- **Everything else is split on non-word characters**, where word characters are letters, digits
  and combining marks: Python's ``\\w`` leaves out vowel signs and viramas, which would cut Hindi,
  Bengali, Sinhala or Tamil words into pieces.
- **Hangul is bigrammed too**, although Korean puts spaces between phrases: a particle or ending
  is written onto its noun (김치를, 김치는, 김치의), so whole-phrase tokens would not let a query
  for 김치 match them. Bigrams of syllables do (김치를 -> 김치, 치를), as in Lucene's CJK analyzer.
- **No stemming by default.** A stemmer exists for a minority of the languages covered, each one
  is a different trade-off, and stemming a query in the wrong language damages it. BM25 over
  unstemmed words is a sound baseline everywhere; bigrams already give some of the recall that
  stemming would. Stopwords are optional for the same reason (none by default): BM25's idf
  already gives frequent words little weight.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable
from itertools import pairwise

# Blocks of the scripts written without spaces between words, within the Basic Multilingual Plane.
_NO_SPACE_BLOCKS = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3038, 0x303B),
    (0x3041, 0x30FF),  # Hiragana, Katakana (with the prolonged sound mark)
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA9E0, 0xA9FF),  # Myanmar extended-B
    (0xAA60, 0xAA7F),  # Myanmar extended-A
    (0xAC00, 0xD7A3),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
)

# Beyond the BMP, whole ranges instead of exact character lists: Python's regex engine checks a
# class with astral ranges range by range, so a few hundred exact ranges made tokenising ~7x
# slower. Kana supplements and the CJK extension planes hold only no-space characters; the other
# supplementary-plane scripts (Adlam, historic scripts, mathematical letters) are word characters
# up to the emoji and symbol blocks, which start at U+1F000 and are not.
_ASTRAL_NO_SPACE = ((0x1AFF0, 0x1B16F), (0x20000, 0x3FFFF))
_ASTRAL_WORD = ((0x10000, 0x1AFEF), (0x1B170, 0x1EFFF))

# Signs that stack the next consonant under the previous one (Myanmar virama, Khmer coeng).
_STACKERS = "\u1039\u17d2"

# Removed before tokenising (a regex with these ranges is ~5x faster than str.translate).
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x0591, 0x05BD),  # Hebrew cantillation and points (not the maqaf, U+05BE)
    (0x05BF, 0x05BF),
    (0x05C1, 0x05C2),
    (0x05C4, 0x05C5),
    (0x05C7, 0x05C7),
    (0x0640, 0x0640),  # Arabic tatweel
    (0x064B, 0x065F),  # Arabic harakat
    (0x200C, 0x200D),  # zero-width non-joiner and joiner
    (0x2060, 0x2060),  # word joiner
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # zero-width no-break space
    (0xE0100, 0xE01EF),  # variation selectors supplement
)


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    """A regex character-class body for inclusive code-point ranges."""
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges
    )


def _ranges(kinds: bytearray, kind: int) -> list[tuple[int, int]]:
    """Inclusive ranges of the code points of one kind (a bytes regex finds the runs quickly)."""
    return [(m.start(), m.end() - 1) for m in re.finditer(re.escape(bytes([kind])) + b"+", kinds)]


def _bmp_kinds() -> bytearray:
    """Per BMP code point: 0 separator, 1 word character, 2 no-space character, 3 no-space mark.

    Letters, digits and combining marks are word characters (``\\w`` alone leaves out vowel signs
    and viramas); punctuation inside the no-space blocks (Thai ๏, Tibetan tsheg, Myanmar ။) stays
    a separator. One scan of the BMP costs ~20 ms at import.
    """
    kinds = bytearray(0x10000)
    for point in range(0x10000):
        category = unicodedata.category(chr(point))
        if category[0] in "LMN":
            kinds[point] = 1
    for lo, hi in _NO_SPACE_BLOCKS:
        for point in range(lo, hi + 1):
            if kinds[point]:
                kinds[point] = 3 if unicodedata.category(chr(point))[0] == "M" else 2
    return kinds


def _compile_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Patterns for a no-space run, a word, a token (run or word), and a character in a run."""
    kinds = _bmp_kinds()
    no_space = _char_class([*_ranges(kinds, 2), *_ranges(kinds, 3), *_ASTRAL_NO_SPACE])
    word = _char_class([*_ranges(kinds, 1), *_ASTRAL_WORD])
    run, words = f"[{no_space}]+", f"[{word}]+"
    # Runs hold only no-space characters, so only those blocks' marks matter here. A stacking
    # sign is a mark too, but it binds the next consonant, so it is matched with it.
    for stacker in _STACKERS:
        kinds[ord(stacker)] = 2
    marks = _char_class(_ranges(kinds, 3))
    cluster = re.compile(f".(?:[{marks}]|[{_STACKERS}].)*", re.DOTALL)
    return re.compile(run), re.compile(words), re.compile(f"({run})|({words})"), cluster


_RUN, _WORD, _TOKEN, _CLUSTER = _compile_patterns()
_INVISIBLE = re.compile(f"[{_char_class(_INVISIBLE_RANGES)}]+")


def _bigrams(run: str) -> list[str]:
    """Overlapping bigrams of a run's characters (base plus marks); a lone character stays whole."""
    chars = _CLUSTER.findall(run)
    if len(chars) == 1:
        return chars
    return [a + b for a, b in pairwise(chars)]


def normalize_for_search(text: str) -> str:
    """NFKC, casefold, and removal of optional invisible marks: what both queries and documents get."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text).casefold())


def tokenize(text: str, *, stopwords: Collection[str] = ()) -> list[str]:
    """BM25 tokens of ``text``: words, and character bigrams for scripts written without spaces.

    ``stopwords`` (compared after normalisation) are dropped; none by default, see the module
    docstring for why.
    """
    text = normalize_for_search(text)
    if _RUN.search(text) is None:  # most text: words only, split in C
        tokens: list[str] = _WORD.findall(text)
    else:
        tokens = []
        for run, word in _TOKEN.findall(text):
            if word:
                tokens.append(word)
            else:
                tokens.extend(_bigrams(run))
    if stopwords:
        return [token for token in tokens if token not in stopwords]
    return tokens
