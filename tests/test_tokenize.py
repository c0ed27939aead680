"""BM25 tokenisation across scripts: words where text has spaces, bigrams where it has none."""

from __future__ import annotations

import time

from m4build.text.tokenize import normalize_for_search, tokenize


def test_english_words_are_casefolded_and_split_on_non_word():
    assert tokenize("Matryoshka dolls (Russian: матрёшка), a set of wooden_dolls.") == [
        "matryoshka", "dolls", "russian", "матрёшка", "a", "set", "of", "wooden", "dolls",
    ]  # fmt: skip


def test_nfkc_and_casefold_fold_compatibility_forms_and_case():
    assert tokenize("Straße ＳＴＲＡＳＳＥ ﬁne") == ["strasse", "strasse", "fine"]
    assert tokenize("ΟΔΟΣ οδος") == ["οδοσ", "οδοσ"]  # final sigma meets sigma


def test_chinese_becomes_overlapping_bigrams():
    assert tokenize("猫是一种小型食肉动物。") == [
        "猫是", "是一", "一种", "种小", "小型", "型食", "食肉", "肉动", "动物",
    ]  # fmt: skip


def test_a_lone_character_is_kept_as_a_unigram():
    assert tokenize("猫") == ["猫"]
    assert tokenize("猫。狗") == ["猫", "狗"]  # punctuation ends a run


def test_japanese_kana_and_kanji_form_one_run_and_latin_digits_stay_words():
    assert tokenize("東京タワーは電波塔") == ["東京", "京タ", "タワ", "ワー", "ーは", "は電", "電波", "波塔"]
    assert tokenize("iPhone手机 2024年") == ["iphone", "手机", "2024", "年"]


def test_thai_bigrams_keep_vowel_and_tone_marks_on_their_consonant():
    tokens = tokenize("ภาษาไทยที่สวยงาม")
    assert "ที่ส" in tokens and "ยที่" in tokens
    assert not any(token[0] in "\u0e31\u0e34\u0e35\u0e36\u0e37\u0e48\u0e49" for token in tokens)


def test_stacked_consonants_stay_with_their_base_in_myanmar_and_khmer():
    assert tokenize("ကမ္ဘာ") == ["ကမ္ဘာ"]
    assert tokenize("ខ្មែរ។") == ["ខ្មែរ"]


def test_arabic_words_ignore_optional_vowel_signs_and_tatweel():
    assert tokenize("الرِّياضِيَّات هي دراسة") == ["الرياضيات", "هي", "دراسة"]
    assert tokenize("عـــربي") == tokenize("عربي")


def test_indic_words_are_not_cut_at_vowel_signs_or_viramas():
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert tokenize("বাংলা ভাষা") == ["বাংলা", "ভাষা"]
    assert tokenize("ශ්‍රී ලංකාව") == ["ශ්රී", "ලංකාව"]  # the zero-width joiner is invisible to search


def test_stopwords_are_optional_and_compared_after_normalisation():
    assert tokenize("The Cat") == ["the", "cat"]
    assert tokenize("The Cat", stopwords={"the"}) == ["cat"]


def test_query_and_document_normalise_the_same_way():
    assert normalize_for_search("Ａ\u00adB") == "ab"


def test_tokenizing_a_long_text_is_fast():
    text = "The domestic cat is a small carnivorous mammal. 猫是一种小型食肉动物。" * 5_000  # ~330 kB
    started = time.perf_counter()
    tokens = tokenize(text)
    assert time.perf_counter() - started < 2
    assert len(tokens) == 5_000 * 17


def test_korean_particles_do_not_hide_the_noun():
    # 김치를 (kimchi + object particle) must match a query for 김치, as in Lucene's CJK analyzer.
    assert "김치" in tokenize("김치를 좋아합니다")
    assert tokenize("김치") == ["김치"]
