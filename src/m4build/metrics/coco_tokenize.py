"""The COCO caption evaluation's text preprocessing, in Python: PTB tokens, lowercased, punctuation dropped.

Reference: pycocoevalcap 1.2 (tylin/coco-caption) ``tokenizer/ptbtokenizer.py``. It pipes every caption
(newlines replaced by spaces) through Stanford CoreNLP 3.4.1's ``edu.stanford.nlp.process.PTBTokenizer``
with ``-preserveLines -lowerCase`` (default options, i.e. ``ptb3Escaping``), then drops the tokens of its
``PUNCTUATIONS`` list: ``'' ' `` ` -LRB- -RRB- -LCB- -RCB- . ? ! , : - -- ... ;``. Every COCO metric
then splits the result on spaces.

The quirks we fix. ``-lowerCase`` lowercases every token, the bracket escapes included
(``PTBTokenizer.java``'s ``tokReader`` calls ``toLowerCase`` on the token text), so ``(`` comes out as
``-lrb-`` and never matches the upper-case ``-LRB-`` of the removal list; and runs like ``!!`` or
``?!`` are single tokens the list does not name. In COCO's numbers both are words. ``parity=True``
(the metrics' ``parity`` mode) keeps them, as the Java pipeline does; the default drops them with
the other punctuation, as the list intends.

What CoreNLP 3.4.1 does and we do the same way: lowercase; split off . , ; : ! ? and quotes (a run of
! and ? is one token); clitics ``n't 's 're 've 'll 'd 'm`` become their own
tokens (``don't`` -> ``do n't``, ``can't`` -> ``ca n't``, ``dog's`` -> ``dog 's``), and so do the
parts of ``cannot gonna gotta wanna lemme gimme`` (``gon na``), ``'tis``, ``y'all`` and ``rock'n'roll``;
hyphenated words, slashed words (``and/or``, ``1/2``), numbers with ``. , :`` inside (``3.5``,
``1,000``, ``10:30``), acronyms, ``o'clock``-style words, ``@user`` and ``#tag``, URLs and e-mail
addresses stay whole; curly quotes, en/em dashes and the ellipsis character become their PTB forms,
``€`` and ``£`` become ``$`` and ``#``, ``½`` becomes ``1/2``; characters outside Unicode's Basic
Multilingual Plane (emoji), which 3.4.1 cannot tokenize, are deleted; ``americanize`` leaves
``colour`` alone in 3.4.1's command-line tokenizer, and so do we. Brackets become ``-lrb- -rrb- -lsb-
-rsb- -lcb- -rcb-`` before the removal above.

Where ours may differ from the Java tokenizer (rare in captions; each changes only the tokens of the
affected words, and candidates and references are tokenized alike):

- Abbreviations: CoreNLP knows hundreds, some only capitalised ("Ill." keeps its period, "ill."
  does not) or depending on what follows; we keep the period on acronyms (``u.s.``, ``ph.d.``) and on
  a fixed list checked against 3.4.1 (titles, streets, company suffixes, months: ``_ABBREVIATIONS``).
  Others (US states, units) lose it here where Java may keep it.
- Special cases of the Java lexer we do not model: SGML tags and entities other than ``&amp;``,
  phone numbers, fractions written with spaces (``5 7/8``), currency signs other than euro and pound.

The test suite compares ``ptb_tokenize(..., parity=True)`` with pycocoevalcap's Java
pipeline on a list of captions covering the cases above, where ``java`` is installed.
"""

from __future__ import annotations

import re
import unicodedata

# pycocoevalcap's PUNCTUATIONS, as they look after -lowerCase: the bracket entries never match.
COCO_PUNCTUATION = frozenset({"''", "'", "``", "`", ".", "?", "!", ",", ":", "-", "--", "...", ";"})
BRACKET_TOKENS = frozenset({"-lrb-", "-rrb-", "-lcb-", "-rcb-", "-lsb-", "-rsb-"})
_EXCLAMATIONS = re.compile(r"[!?]+")

_CHARACTER_MAP = str.maketrans(
    {
        "\u2018": "`",  # left single quote
        "\u2019": "'",  # right single quote, also the typographic apostrophe
        "\u201c": " `` ",
        "\u201d": " '' ",
        "\u2013": " -- ",
        "\u2014": " -- ",
        "\u2015": " -- ",
        "\u2026": " ... ",
        "\u00a0": " ",
        "\n": " ",
        "\r": " ",
        # normalizeCurrency and normalizeFractions: the only currencies of the PTB3 WSJ are $ and #.
        "\u20ac": "$",
        "\u00a3": "#",
        "\u00bd": " 1/2 ",
        "\u00bc": " 1/4 ",
        "\u00be": " 3/4 ",
    }
)
_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}
_OPENING_CONTEXT = frozenset(" ([{<`")
# Abbreviations that keep their period, checked against CoreNLP 3.4.1: titles and ranks, streets,
# company suffixes, months, two weekdays (it splits "Sat." and "Sun."), "et al.".
_ABBREVIATIONS = (
    "mrs|mr|ms|mme|dr|prof|rev|hon|gen|gov|sen|rep|capt|col|lt|sgt|jr|sr|"
    "st|mt|ave|blvd|rd|ft|dept|univ|bros|inc|ltd|co|corp|vs|etc|al|"
    "jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec|mon|tue"
)

_TOKEN = re.compile(
    rf"""
      (?P<url>(?:https?://|www\.)\S+?)(?=[.,;:!?'")\]}}]*(?:\s|$))
    | (?P<email>[\w.+-]+@\w[\w-]*(?:\.\w[\w-]*)+)
    | (?P<handle>[@#][^\W\d_]\w*)
    | (?P<quotes>``|'')
    | (?P<acronym>[^\W\d_]+\.(?:[^\W\d_]\.)+)
    | (?P<abbreviation>(?<!\w)(?i:{_ABBREVIATIONS})\.)
    | (?P<assimilation>(?<!\w)(?i:can(?=not)|gon(?=na)|got(?=ta)|wan(?=na)|lem(?=me)|gim(?=me))(?=\w+(?!\w)))
    | (?P<stem>\w+?(?=(?i:n't)(?!\w)))
    | (?P<negation>(?i:n't)(?!\w))
    | (?P<clitic>(?<=\w)'(?i:s|re|ve|ll|d|m)(?!\w))
    | (?P<archaic>(?<!\w)'(?i:t)(?=(?i:is|was)(?!\w)))
    | (?P<you>(?<!\w)(?i:y)'(?=\w))
    | (?P<and>'(?i:n)'(?=\w))
    | (?P<aposword>(?<!\w)(?i:[dlo]'\w+|ma'am))
    | (?P<ampword>[A-Z]+&[A-Z]+)
    | (?P<number>(?<!\w)[-+]?\d+(?:[.,:]\d+)+(?:[-/]\w+)*)
    | (?P<signed>(?<!\w)[-+]\d+)
    | (?P<word>\w+(?:[-./]\w+)*)
    | (?P<ellipsis>\.{{2,}})
    | (?P<dashes>-{{2,}})
    | (?P<exclamations>[!?]{{2,}})
    | (?P<other>\S)
    """,
    re.VERBOSE,
)


def ptb_tokenize(text: str, *, parity: bool = False) -> list[str]:
    """COCO's caption preprocessing: PTB tokens, lowercased, COCO's punctuation list removed.

    ``parity=True`` reproduces the Java pipeline's quirks (bracket tokens and runs of ! and ? kept,
    see the module docstring); the default removes them too.
    """
    tokens = [token for token in _ptb_tokens(text) if token not in COCO_PUNCTUATION]
    if parity:
        return tokens
    return [token for token in tokens if token not in BRACKET_TOKENS and not _EXCLAMATIONS.fullmatch(token)]


def _ptb_tokens(text: str) -> list[str]:
    """The lowercased PTB tokens of ``text``, punctuation included."""
    normalized = unicodedata.normalize("NFC", text).replace("&amp;", "&").translate(_CHARACTER_MAP)
    tokens = []
    for match in _TOKEN.finditer(normalized):
        token = _ptb_form(match.lastgroup or "other", match.group(), normalized, match.start())
        if token:
            tokens.append(token.lower())
    return tokens


def _ptb_form(kind: str, token: str, text: str, start: int) -> str:
    """How PTBTokenizer 3.4.1 writes a matched token ("" for one it deletes)."""
    if kind == "ellipsis":
        return "..."
    if kind == "dashes":
        return "--"
    if kind != "other":
        return token
    if token in _BRACKETS:
        return _BRACKETS[token]
    if token == '"':
        return "``" if start == 0 or text[start - 1] in _OPENING_CONTEXT else "''"
    # Characters beyond the Basic Multilingual Plane (emoji) are "untokenizable" to 3.4.1 and deleted.
    return "" if ord(token) > 0xFFFF else token
