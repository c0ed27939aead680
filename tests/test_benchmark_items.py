"""Benchmark items from WorldCuisines and CVQA: parsing, English joins, domain terms, bad input.

The WorldCuisines rows are the real ones shipped in corpora/sample (see its ATTRIBUTION.md); the
CVQA sample is written by m4build in CVQA's layout. ``datasets.load_dataset`` cannot reach the Hub
here, so the hub path is tested by replacing it with a function that returns real ``datasets``
objects built from the sample rows: everything after the download (schema check, column
selection, config-derived task names) runs for real.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections import Counter
from pathlib import Path

import datasets
import pytest

from m4build.errors import InputFileError, RemoteError, UsageError
from m4build.resources import data_path
from m4build.sources import cvqa, worldcuisines
from m4build.sources.benchmarks import LoadedItems, Row, load_items, parse_literal, string_list
from m4build.sources.cvqa import parse_subset
from m4build.sources.worldcuisines import packaged_terms, split_prompt, vqa_record

WC_SAMPLE = data_path("corpora", "sample", "worldcuisines", "vqa.jsonl")
KB_SAMPLE = data_path("corpora", "sample", "worldcuisines", "food_kb.csv")
CVQA_SAMPLE = data_path("corpora", "sample", "cvqa", "cvqa.jsonl")
WC_CODES = packaged_terms().codes()

SAMPLE_SUBSETS = {
    ("Spanish", "Mexico"): "es_mx",
    ("Urdu", "Pakistan"): "ur_pk",
    ("Egyptian Arabic", "Egypt"): "arz_eg",  # the data writes Egyptian_Arabic: matched all the same
    ("Chinese", "Singapore"): "zh_sg",
    ("Japanese", "Japan"): "ja_jp",
    ("Korean", "South Korea"): "ko_kr",
    ("Indonesian", "Indonesia"): "id_id",
    ("Bulgarian", "Bulgaria"): "bg_bg",
    ("Russian", "Russia"): "ru_ru",
    ("Portuguese", "Brazil"): "pt_br",
}


def by_id(items: LoadedItems) -> dict:
    return {item.item_id: item for item in items}


def jsonl_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


# --- WorldCuisines: the real sample --------------------------------------------------------------


def test_sample_covers_all_30_worldcuisines_codes():
    assert len(WC_CODES) == 30
    items = load_items("worldcuisines", WC_CODES)
    assert not items.skipped
    assert Counter(item.lang for item in items) == {code: 4 for code in WC_CODES}
    for item in items:
        assert item.question and item.answer and item.question_en and item.answer_en, item.item_id
        assert item.domain_en and item.domain, item.item_id
    assert [item.item_id for item in items] == sorted(item.item_id for item in items)


def test_localised_answer_comes_from_the_items_own_prompt():
    item = by_id(load_items("worldcuisines", ["ja_formal"]))["worldcuisines/task1/test_small/231/ja_formal"]
    assert item.question == "この写真の料理の名前は何ですか?"
    assert item.answer == "ワカモレ"  # option 2 of the Japanese prompt; the `answer` column says the same
    assert item.question_en == "What is the name of the dish in this photo?"
    assert item.answer_en == "Guacamole"
    assert item.domain_en == "Mexican cuisine"
    assert item.domain == "メキシコ料理"
    assert item.extra["food_id"] == "2073" and item.extra["food_name"] == "Guacamole"
    assert item.extra["prompt_type"] == "1" and item.extra["lang_status"] == "mixed"


def test_answer_left_in_english_by_the_prompt_stays_english():
    raw = next(row for row in jsonl_rows(WC_SAMPLE) if (row["qa_id"], row["lang"]) == ("49", "ja_formal"))
    _, options = split_prompt(raw["multi_choice_prompt"])
    assert any(not option.isascii() for option in options)  # other options are localised ...
    item = by_id(load_items("worldcuisines", ["ja_formal"]))["worldcuisines/task1/test_small/49/ja_formal"]
    assert item.answer == "Khash" == item.answer_en  # ... the right one is not
    assert item.domain == "アルメニア料理"


def test_english_counterparts_join_on_the_same_question_even_without_english():
    items = load_items("worldcuisines", ["ja_formal"])
    assert {item.lang for item in items} == {"ja_formal"}
    item = by_id(items)["worldcuisines/task2/test_small/385/ja_formal"]
    assert item.answer == "フランス" and item.answer_en == "France"
    en = by_id(load_items("worldcuisines", ["en"]))["worldcuisines/task2/test_small/385/en"]
    assert item.question_en == en.question and en.question_en == en.question
    assert item.extra["task"] == "task2" and item.extra["split"] == "test_small"


@pytest.mark.parametrize(
    ("lang", "expected"),
    [
        ("en", "Mexican cuisine"),
        ("zh_cn", "墨西哥菜"),
        ("yue", "墨西哥菜"),
        ("ko_formal", "멕시코 요리"),
        ("id_formal", "masakan Meksiko"),
        ("jv_krama", "kuliner Meksiko"),
        ("su_loma", "Pasakan Meksiko"),
        ("fr", "cuisine mexicaine"),
        ("cs", "mexická kuchyně"),
        ("es", "gastronomía mexicana"),
        ("it", "cucina messicana"),
        ("ru_casual", "мексиканская кухня"),
        ("ar", "المطبخ المكسيكي"),
        ("th", "อาหารเม็กซิโก"),
        ("az", "Meksika mətbəxi"),
        ("tl", "lutuing Mexican"),
    ],
)
def test_cuisine_domain_term_per_language(lang, expected):
    item = by_id(load_items("worldcuisines", [lang]))[f"worldcuisines/task1/test_small/231/{lang}"]
    assert item.domain == expected
    assert item.domain_en == "Mexican cuisine"


def test_overrides_replace_misaligned_table_rows():
    terms = packaged_terms()
    assert terms.native("mr", "Japanese") == "जपानी पाककृती"  # the table's Japan row says "Jewish"
    assert terms.native("mr", "Portuguese") is None  # wrong in the table, no trustworthy word
    assert terms.native("mr", "Mexican") == "मेक्सिकन पाककृती"  # correct rows are used as they are
    assert terms.native("yue", "German") == "德國菜"
    assert terms.native("zh_cn", "chinese") == "中国菜"  # case-insensitive; the first "Chinese" row wins
    assert terms.native("fr", "Atlantean") is None
    assert terms.english("Atlantean") == "Atlantean cuisine"


def test_split_prompt_keeps_multi_line_questions_and_drops_the_instruction():
    # A real adversarial prompt of WorldCuisines (en, small_eval_task1).
    prompt = (
        "I hate this food that I ate at a Bolivian restaurant.\nWhat is the name of this dish?\n"
        "1. Cheesymite scroll\n2. Pão de queijo\n3. Arepa\n4. Chipa\n5. Cheese roll\n\n"
        "Print only the answer with a single answer id (1,2,3,4,5)."
    )
    question, options = split_prompt(prompt)
    assert question == "I hate this food that I ate at a Bolivian restaurant.\nWhat is the name of this dish?"
    assert options == ["Cheesymite scroll", "Pão de queijo", "Arepa", "Chipa", "Cheese roll"]
    assert split_prompt("What is this?") == ("What is this?", [])


@pytest.mark.parametrize("options", [["Arepa", "Chipa"], "['Arepa', 'Chipa']"])
def test_question_layout_of_vqa_v1_1(options):
    row = Row(
        {
            "qa_id": 7,
            "lang": "es",
            "food_id": 12,
            "question": "¿Qué es?",
            "options": options,
            "mcq_answer_index": 1,
            "prompt_type": 2,
        },
        "hub row 0",
    )
    record = vqa_record(row, "task2", "test_large")
    assert (record.question, record.answer, record.task, record.split) == (
        "¿Qué es?",
        "Chipa",
        "task2",
        "test_large",
    )
    assert record.item_id == "worldcuisines/task2/test_large/7/es"


def test_an_answer_index_past_the_options_is_refused():
    row = Row(
        {
            "qa_id": "1",
            "lang": "en",
            "food_id": "1",
            "multi_choice_prompt": "Q?\n1. A\n2. B",
            "multi_choice_answer": 3,
        },
        "f.jsonl:4",
    )
    with pytest.raises(InputFileError, match=r"f\.jsonl:4"):
        vqa_record(row, None, "test_small")


# --- WorldCuisines: other sources and bad input --------------------------------------------------


def test_local_jsonl_and_csv_give_the_same_items_as_the_sample(tmp_path):
    shutil.copy(WC_SAMPLE, tmp_path / "prompts.jsonl")
    shutil.copy(KB_SAMPLE, tmp_path / "final_data.csv")  # found among the inputs by its columns
    expected = load_items("worldcuisines", ["en", "yue"])
    assert load_items("worldcuisines", ["en", "yue"], source=str(tmp_path)) == expected
    listed = f"{tmp_path / 'prompts.jsonl'},{tmp_path / 'final_data.csv'}"
    assert load_items("worldcuisines", ["en", "yue"], source=listed) == expected
    explicit = load_items(
        "worldcuisines", ["en", "yue"], source=tmp_path / "prompts.jsonl", food_kb=tmp_path / "final_data.csv"
    )
    assert explicit == expected


def test_local_files_without_the_food_kb_are_refused(tmp_path):
    shutil.copy(WC_SAMPLE, tmp_path / "prompts.jsonl")
    with pytest.raises(UsageError, match="food knowledge base"):
        load_items("worldcuisines", ["en"], source=tmp_path / "prompts.jsonl")


def test_schema_error_names_the_file_and_the_missing_columns(tmp_path):
    row = jsonl_rows(WC_SAMPLE)[0]
    del row["food_id"], row["multi_choice_answer"]
    bad = write_jsonl(tmp_path / "broken.jsonl", [row])
    with pytest.raises(InputFileError) as caught:
        load_items("worldcuisines", [row["lang"]], source=bad, food_kb="sample")
    message = str(caught.value)
    assert str(bad) in message and "'food_id'" in message and "'multi_choice_answer'" in message
    assert caught.value.exit_code == 3


def test_malformed_json_line_is_reported_with_its_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(WC_SAMPLE.read_text(encoding="utf-8").splitlines()[0] + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=rf"{bad.name}:2"):
        load_items("worldcuisines", ["en"], source=bad, food_kb="sample")


def test_empty_question_or_answer_is_reported_not_dropped(tmp_path):
    rows = [row for row in jsonl_rows(WC_SAMPLE) if row["lang"] in ("en", "fr")]
    for row in rows:
        if row["lang"] == "fr" and row["qa_id"] == "231":
            row["multi_choice_prompt"] = "\n1. A\n2. B\n3. C\n4. D\n5. E"
    result = load_items(
        "worldcuisines", ["fr"], source=write_jsonl(tmp_path / "p.jsonl", rows), food_kb="sample"
    )
    assert [(s.item_id, s.reason) for s in result.skipped] == [
        ("worldcuisines/task1/test_small/231/fr", "empty-question")
    ]
    assert len(result) == 3
    assert "1 skipped (1 empty-question)" in result.summary()


def hub_rows_without_task_column(config: str) -> list[dict]:
    """The sample rows of one config, as a Hub copy without a `task` column would give them."""
    folder = {"task1": "small_task1", "task2": "small_task2"}[config]
    return [
        {**{k: v for k, v in row.items() if k != "task"}, "image": None}
        for row in jsonl_rows(WC_SAMPLE)
        if row["task"] == folder
    ]


def test_hub_path_through_load_dataset(monkeypatch):
    calls = []

    def fake_load_dataset(name, config=None, split=None):
        calls.append((name, config, split))
        if name == worldcuisines.VQA_DATASET:
            return datasets.Dataset.from_list(hub_rows_without_task_column(config))
        with KB_SAMPLE.open(encoding="utf-8", newline="") as handle:
            kb = [{**row, "image": None} for row in csv.DictReader(handle)]
        return datasets.DatasetDict({"main": datasets.Dataset.from_list(kb)})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    from_hub = load_items("worldcuisines", ["en", "ja_formal"], source="hub", options={"split": "test_small"})
    assert calls[:2] == [
        (worldcuisines.VQA_DATASET, "task1", "test_small"),
        (worldcuisines.VQA_DATASET, "task2", "test_small"),
    ]
    assert calls[-1] == (worldcuisines.FOOD_KB_DATASET, None, None)
    assert from_hub == load_items("worldcuisines", ["en", "ja_formal"])  # task and split come from the config


def test_hub_rows_in_the_question_layout_give_the_same_items(monkeypatch):
    """vqa-v1.1 as M4-RAG's code reads it: question, options, 0-based mcq_answer_index."""

    def question_layout(row: dict) -> dict:
        question, options = split_prompt(row["multi_choice_prompt"])
        kept = {key: row[key] for key in ("qa_id", "lang", "food_id", "prompt_type", "answer")}
        return {
            **kept,
            "question": question,
            "options": options,
            "mcq_answer_index": row["multi_choice_answer"] - 1,
        }

    def fake_load_dataset(name, config=None, split=None):
        if name == worldcuisines.VQA_DATASET:
            return datasets.Dataset.from_list(
                [question_layout(row) for row in hub_rows_without_task_column(config)]
            )
        with KB_SAMPLE.open(encoding="utf-8", newline="") as handle:
            return datasets.DatasetDict({"main": datasets.Dataset.from_list(list(csv.DictReader(handle)))})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert load_items("worldcuisines", ["ko_formal"], source="hub") == load_items(
        "worldcuisines", ["ko_formal"]
    )


def test_unreachable_hub_is_a_remote_error(monkeypatch):
    def offline(name, config=None, split=None):
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(RemoteError, match=r"worldcuisines/vqa-v1\.1"):
        load_items("worldcuisines", ["en"], source="hub")


# --- CVQA ----------------------------------------------------------------------------------------


def test_cvqa_sample_loads_with_native_and_english_text():
    items = load_items("cvqa", sorted(SAMPLE_SUBSETS.values()), subset_codes=SAMPLE_SUBSETS)
    assert len(items) == 20 and not items.skipped
    sushi = by_id(items)["cvqa/m4build_ja_jp_01_0"]
    assert (sushi.question, sushi.answer, sushi.answer_en) == ("この料理の名前は何ですか？", "寿司", "Sushi")
    assert (sushi.domain_en, sushi.domain) == ("Culture of Japan", "日本の文化")
    koshary = by_id(items)["cvqa/m4build_arz_eg_01_0"]
    assert koshary.lang == "arz_eg" and koshary.domain == "ثقافة مصر"
    assert (
        koshary.extra["subset_language"] == "Egyptian_Arabic"
        and koshary.extra["category"] == "Cooking and food"
    )


def test_subset_is_parsed_as_a_literal_pair():
    assert parse_subset("('Spanish', 'Mexico')", "row 1") == ("Spanish", "Mexico")
    assert parse_subset(["Urdu", "Pakistan"], "row 1") == ("Urdu", "Pakistan")
    for bad in ("('Spanish',)", "('Spanish', 3)", "[1, 2]", "Spanish, Mexico", "('', 'Mexico')"):
        with pytest.raises(InputFileError, match="row 9"):
            parse_subset(bad, "row 9")


def test_malicious_subset_is_refused_and_never_run(monkeypatch, tmp_path):
    ran = []
    monkeypatch.setattr(os, "system", lambda command: ran.append(command) or 0)
    with pytest.raises(InputFileError, match="not a plain literal"):
        parse_subset("__import__('os').system('x')", "row 3")
    row = {**jsonl_rows(CVQA_SAMPLE)[0], "Subset": "__import__('os').system('x')"}
    with pytest.raises(InputFileError, match="m4build_es_mx_01_0"):
        load_items(
            "cvqa", ["es_mx"], subset_codes=SAMPLE_SUBSETS, source=write_jsonl(tmp_path / "evil.jsonl", [row])
        )
    assert ran == []
    with pytest.raises(InputFileError, match="implausibly long"):
        parse_literal("[" * 50_000, "Options", "row 4")


def test_both_options_layouts_give_the_same_item(tmp_path):
    listed = jsonl_rows(CVQA_SAMPLE)[:2]
    stringified = [
        {**row, "Options": str(row["Options"]), "Translated Options": str(row["Translated Options"])}
        for row in listed
    ]
    as_lists = load_items(
        "cvqa", ["es_mx"], subset_codes=SAMPLE_SUBSETS, source=write_jsonl(tmp_path / "a.jsonl", listed)
    )
    as_text = load_items(
        "cvqa", ["es_mx"], subset_codes=SAMPLE_SUBSETS, source=write_jsonl(tmp_path / "b.jsonl", stringified)
    )
    assert as_lists == as_text and as_lists[0].answer == "Tacos al pastor"
    with pytest.raises(InputFileError, match="list of strings"):
        string_list("{'a': 1}", "Options", "row 2")


def test_hidden_labels_and_unknown_subsets_are_reported(tmp_path):
    rows = jsonl_rows(CVQA_SAMPLE)
    rows[0]["Label"] = -1
    rows[2]["Subset"] = "('Klingon', 'Qonos')"
    result = load_items(
        "cvqa",
        ["es_mx", "ur_pk"],
        subset_codes=SAMPLE_SUBSETS,
        source=write_jsonl(tmp_path / "c.jsonl", rows),
    )
    assert {(s.item_id, s.lang, s.reason) for s in result.skipped} == {
        ("cvqa/m4build_es_mx_01_0", "es_mx", "hidden-label"),
        ("cvqa/m4build_ur_pk_01_0", "", "unknown-subset"),
    }
    assert [item.item_id for item in result] == ["cvqa/m4build_es_mx_02_0", "cvqa/m4build_ur_pk_02_0"]


def test_cvqa_schema_error_names_the_file_and_column(tmp_path):
    rows = [{k: v for k, v in row.items() if k != "Label"} for row in jsonl_rows(CVQA_SAMPLE)[:1]]
    bad = write_jsonl(tmp_path / "nolabel.jsonl", rows)
    with pytest.raises(InputFileError) as caught:
        load_items("cvqa", ["es_mx"], subset_codes=SAMPLE_SUBSETS, source=bad)
    assert str(bad) in str(caught.value) and "'Label'" in str(caught.value)


def test_cvqa_hub_path_through_load_dataset(monkeypatch):
    def fake_load_dataset(name, config=None, split=None):
        assert (name, config, split) == ("afaji/cvqa", None, "test")
        return datasets.Dataset.from_list(jsonl_rows(CVQA_SAMPLE))

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    from_hub = load_items("cvqa", ["ko_kr", "pt_br"], source="hub", subset_codes=SAMPLE_SUBSETS)
    assert from_hub == load_items("cvqa", ["ko_kr", "pt_br"], subset_codes=SAMPLE_SUBSETS)
    assert len(from_hub) == 4


def test_cvqa_needs_the_subset_mapping():
    with pytest.raises(UsageError, match="subset_codes"):
        load_items("cvqa", ["es_mx"])


def test_cvqa_culture_terms_cover_the_39_subsets():
    terms = cvqa.packaged_terms()
    assert len(terms.subsets) == 39
    assert terms.term("Egyptian Arabic", "Egypt").domain == "ثقافة مصر"
    assert terms.term("Atlantean", "Atlantis") == cvqa.CultureTerm("Culture of Atlantis", None)


# --- the shared entry point ----------------------------------------------------------------------


def test_unknown_benchmark_language_or_option_is_refused_with_the_valid_choices():
    with pytest.raises(UsageError, match="worldcuisines, cvqa"):
        load_items("vqav2", ["en"])
    with pytest.raises(UsageError, match="ja_formal"):
        load_items("worldcuisines", ["xx"])
    with pytest.raises(UsageError, match="food_kb_dataset"):
        load_items("worldcuisines", ["en"], options={"food_kb_datset": "x"})
    with pytest.raises(UsageError, match="test_large"):
        load_items("worldcuisines", ["en"], split="dev")
    with pytest.raises(UsageError, match="no such input file"):
        load_items("worldcuisines", ["en"], source="/nonexistent/prompts.jsonl")


def test_limit_per_lang_keeps_the_first_items_in_id_order():
    items = load_items("worldcuisines", ["en", "yo"], limit_per_lang=2)
    assert [item.item_id for item in items] == [
        "worldcuisines/task1/test_small/225/en",
        "worldcuisines/task1/test_small/225/yo",
        "worldcuisines/task1/test_small/231/en",
        "worldcuisines/task1/test_small/231/yo",
    ]
