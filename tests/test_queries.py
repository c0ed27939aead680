"""Query formation: the paper's three types, each in English and in the item's language."""

from __future__ import annotations

import pytest

from m4build.errors import UsageError
from m4build.pipelines.m4rag.queries import FormQueries, clean_query, unique_keys
from m4build.records import BenchmarkItem

SUSHI_JA = BenchmarkItem(
    benchmark="worldcuisines",
    item_id="wc/1/ja_formal",
    lang="ja_formal",
    question="この料理は何と言いますか?",
    answer="寿司",
    question_en="What is this dish called?",
    answer_en="Sushi",
    domain_en="Japanese cuisine",
    domain="日本料理",
)
SUSHI_EN = BenchmarkItem(
    benchmark="worldcuisines",
    item_id="wc/1/en",
    lang="en",
    question="What is this dish called?",
    answer="Sushi",
    question_en="What is this dish called?",
    answer_en="Sushi",
    domain_en="Japanese cuisine",
    domain="Japanese cuisine",
)
WIKIS = {"ja_formal": "jawiki", "en": "enwiki"}


def test_every_type_in_english_and_native_language():
    queries = list(FormQueries(WIKIS).run([SUSHI_JA]))
    got = {(q.query_type, q.query_lang, q.wiki): q.text for q in queries}
    assert got == {
        ("question", "en", "enwiki"): "What is this dish called?",
        ("answer", "en", "enwiki"): "Sushi",
        ("culture", "en", "enwiki"): "Sushi Japanese cuisine",
        ("question", "ja_formal", "jawiki"): "この料理は何と言いますか?",
        ("answer", "ja_formal", "jawiki"): "寿司",
        ("culture", "ja_formal", "jawiki"): "寿司 日本料理",
    }


def test_english_items_are_searched_once_per_type():
    queries = list(FormQueries(WIKIS).run([SUSHI_EN]))
    assert sorted((q.query_type, q.wiki) for q in queries) == [
        ("answer", "enwiki"),
        ("culture", "enwiki"),
        ("question", "enwiki"),
    ]


def test_identical_texts_on_one_wiki_are_one_search():
    queries = list(FormQueries(WIKIS).run([SUSHI_JA, SUSHI_EN]))
    keys = unique_keys(query.key for query in queries)
    assert len(queries) == 9
    assert len(keys) == 6  # the English side of both items is the same three searches
    assert keys == sorted(keys)


def test_culture_query_needs_both_answer_and_domain():
    item = BenchmarkItem("cvqa", "cvqa/1", "es_mx", "¿Qué es?", "Mole", "What is it?", "Mole", None, None)
    former = FormQueries({"es_mx": "eswiki"}, query_types=["culture", "answer"])
    queries = list(former.run([item]))
    assert {q.query_type for q in queries} == {"answer"}
    assert former.stats["empty"] == 2


def test_subset_of_types_and_languages():
    queries = list(FormQueries(WIKIS, query_types=["answer"], query_languages=["native"]).run([SUSHI_JA]))
    assert [(q.query_type, q.wiki, q.text) for q in queries] == [("answer", "jawiki", "寿司")]


def test_unknown_choices_are_refused_with_the_valid_ones():
    with pytest.raises(UsageError, match="question, answer, culture"):
        FormQueries(WIKIS, query_types=["caption"])
    with pytest.raises(UsageError, match="en, native"):
        FormQueries(WIKIS, query_languages=["fr"])


def test_long_queries_are_cut_at_a_word():
    text = " ".join(["word"] * 100)
    cut = clean_query(text, 30)
    assert len(cut) <= 30 and cut.endswith("word") and "  " not in cut
    assert clean_query("  a\n\tb  ", 300) == "a b"
