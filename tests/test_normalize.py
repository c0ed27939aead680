"""Normalised hashing finds the duplicates a reader would call identical, and only those."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from m4build.text.normalize import normalize_for_hash, text_hash
from m4build.text.sections import parse_sections

HTML_DIR = Path(__file__).parent / "fixtures" / "wikipedia" / "html"


def _sections(name: str) -> list[str]:
    html = gzip.decompress((HTML_DIR / f"{name}.gz").read_bytes()).decode("utf-8")
    return [section.text for section in parse_sections(html)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Hello,   World!\n", "hello world"),
        ("Straße", "strasse"),  # case folding, not just lower()
        ("ﬁsh ２０２４", "fish 2024"),  # NFKC: ligature, full-width digits
        ("Café", "café"),  # composed and decomposed accents meet
        ("red,green", "red green"),  # punctuation splits rather than glues
        ("«中国»，“中华”。", "中国 中华"),  # CJK and guillemet punctuation
        ("مرحبا\u200f بالعالم", "مرحبا بالعالم"),  # right-to-left mark
        ("1 + 1 = 2 °C 5%", "1 + 1 = 2 °c 5"),  # symbols stay, % is punctuation
        ("नमस्ते", "नमस्ते"),  # combining vowel signs and virama stay
    ],
)
def test_normalize_for_hash(text: str, expected: str) -> None:
    assert normalize_for_hash(text) == expected


def test_hash_is_equal_for_differences_a_reader_would_not_see() -> None:
    assert text_hash("The Cat sat.") == text_hash("the  cat sat")
    assert text_hash("Cafe\u0301 au lait") == text_hash("Café au lait")
    assert text_hash("The cat sat.") != text_hash("The cat sat on the mat.")
    assert text_hash("1 + 1") != text_hash("1 - 1")


def test_hash_is_a_stable_hex_digest() -> None:
    digest = text_hash("Matryoshka dolls")
    assert len(digest) == 32 and int(digest, 16) >= 0
    assert digest == text_hash("matryoshka DOLLS!")


def test_one_revision_in_two_renderings_hashes_section_by_section_the_same() -> None:
    legacy = _sections("fr--talk-le-monde--legacy.html")
    parsoid = _sections("fr--talk-le-monde--parsoid.html")
    assert [text_hash(text) for text in legacy] == [text_hash(text) for text in parsoid]
    assert len({text_hash(text) for text in legacy}) == len(legacy)


def test_serbian_scripts_are_not_duplicates() -> None:
    cyrillic = _sections("sr-cyrl--village-pump-tech-archive-35--legacy.html")
    latin = _sections("sr-latn--village-pump-tech-archive-35--legacy.html")
    assert not {text_hash(text) for text in cyrillic} & {text_hash(text) for text in latin}
