"""Normalised text and its hash, for removing exact-duplicate sections across a corpus.

The same section text reaches a corpus many times: one article retrieved by several queries, a
"See also" list shared by sibling articles, a lead copied into a translation, the same revision
fetched as legacy and as Parsoid HTML. Those copies differ only in ways a reader would not notice —
Unicode forms (full-width digits, ligatures, composed accents), letter case, whitespace, invisible
direction marks, punctuation — so they are compared after removing exactly those differences and
nothing more: letters, digits, combining marks and symbols (``+``, ``%``, ``°``) all stay.
"""

from __future__ import annotations

import hashlib
import unicodedata


class _Folding(dict[int, int | str | None]):
    """``str.translate`` table built lazily: punctuation becomes a space, format characters
    (direction marks, zero-width joiners, soft hyphens) vanish, everything else stays.

    Filling the table on first sight of each code point costs one ``unicodedata`` lookup per
    distinct character instead of per character, and never walks all 1.1 million code points.
    """

    def __missing__(self, codepoint: int) -> int | str | None:
        category = unicodedata.category(chr(codepoint))
        folded: int | str | None = codepoint
        if category[0] == "P":
            folded = " "
        elif category == "Cf":
            folded = None
        self[codepoint] = folded
        return folded


_FOLDING = _Folding()


def normalize_for_hash(text: str) -> str:
    """``text`` reduced to what makes two texts different for a reader.

    NFKC (compatibility forms: ``"ﬁ"`` → ``"fi"``, full-width ``"１"`` → ``"1"``), case folding
    (``"Straße"`` → ``"strasse"``), punctuation replaced by a space rather than deleted (so that
    ``"red,green"`` and ``"red green"`` agree), format characters removed, whitespace runs
    collapsed to one space and trimmed.
    """
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_FOLDING)
    return " ".join(folded.split())


def text_hash(text: str) -> str:
    """Hex BLAKE2b-128 digest of ``normalize_for_hash(text)``: equal for duplicates.

    128 bits keep the chance of two different sections colliding negligible for any corpus size
    we build, at half the length of a SHA-256 hex string.
    """
    normalized = normalize_for_hash(text).encode("utf-8")
    return hashlib.blake2b(normalized, digest_size=16).hexdigest()
