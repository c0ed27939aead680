"""Multiple-choice parsing and accuracy (m4build.metrics.choice) on real WorldCuisines prompts.

The rows in fixtures/worldcuisines_vqa/ are copied from the WorldCuisines repository (see ATTRIBUTION.md);
"parity" cases reproduce worldcuisines/worldcuisines evaluation/score/score.py (score_mc).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from m4build.metrics.checks import MetricInputError
from m4build.metrics.choice import (
    ChoiceRecord,
    ChoiceRule,
    grade_choice,
    options_from_prompt,
    parse_choice,
    score_choices,
)

VQA_ROWS = Path(__file__).parent / "fixtures" / "worldcuisines_vqa" / "vqa_rows.jsonl"
ROWS = {(row["qa_id"], row["lang"]): row for row in map(json.loads, VQA_ROWS.read_text("utf-8").splitlines())}


def prompt(qa_id: str, lang: str) -> str:
    return ROWS[qa_id, lang]["multi_choice_prompt"]


def record(qa_id: str, lang: str, raw_output: object, **changes: object) -> ChoiceRecord:
    row = ROWS[qa_id, lang]
    fields = {
        "item_id": f"{qa_id}-{lang}",
        "language": lang,
        "prompt_type": row["prompt_type"],
        "raw_output": raw_output,
        "gold_option": row["multi_choice_answer"],
        "prompt_text": row["multi_choice_prompt"],
    }
    fields.update(changes)
    return ChoiceRecord(**fields)


# --- options --------------------------------------------------------------------------------------


def test_options_are_read_from_a_real_prompt():
    assert options_from_prompt(prompt("0", "en")) == (
        "Eggplant papoutsaki",
        "Stuffed eggplant",
        "Makdous",
        "Stuffed tomatoes",
        "Stuffed squid",
    )


def test_a_prompt_with_four_options_has_four_although_it_asks_for_ids_1_to_5():
    assert options_from_prompt(prompt("137", "en")) == ("Bialy", "Pistolet", "Bublik", "Pain de campagne")


def test_a_numbered_line_in_the_question_does_not_shift_the_options():
    text = "Steps:\n1. Look at the dish\nWhich is it?\n1. Ramen\n2. Pho\n\nAnswer with an id."
    assert options_from_prompt(text) == ("Ramen", "Pho")


# --- the corrected cascade (default) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "option", "rule"),
    [
        ("2", 2, ChoiceRule.INTEGER),
        (" (4). ", 4, ChoiceRule.INTEGER),
        ("**3**", 3, ChoiceRule.INTEGER),
        ('"3"', 3, ChoiceRule.INTEGER),
        ("2. Stuffed eggplant", 2, ChoiceRule.NUMBERED),
        ("5) Stuffed squid", 5, ChoiceRule.NUMBERED),
        ('{"answer": 2}', 2, ChoiceRule.JSON_NUMBER),
        ('{"answer": 2.0}', 2, ChoiceRule.JSON_NUMBER),
        ('```json\n{"explanation": "Of the 5 dishes...", "answer": 5}\n```', 5, ChoiceRule.JSON_NUMBER),
        (
            '{"explanation": "Of the 5 dishes, this one", "answer": "2. Stuffed eggplant"}',
            2,
            ChoiceRule.NUMBERED,
        ),
        ('Sure! {"Answer": "3"}', 3, ChoiceRule.INTEGER),
        ("<think>Option 1 is papoutsaki, so not 1.</think>\n3", 3, ChoiceRule.INTEGER),
        ("Makdous", 3, ChoiceRule.OPTION_TEXT),
        ("stuffed  TOMATOES.", 4, ChoiceRule.OPTION_TEXT),
        ("The answer is 4", 4, ChoiceRule.FIRST_INTEGER),
        ("In 2024 I would say option 3", 3, ChoiceRule.FIRST_INTEGER),
        ("I think it is stuffed squid.", 5, ChoiceRule.OPTION_MENTION),
    ],
)
def test_default_reads_the_answer(raw, option, rule):
    parsed = parse_choice(raw, prompt_text=prompt("0", "en"))
    assert (parsed.option, parsed.rule) == (option, rule)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "Stuffed",  # a prefix of three options
        "It is either Makdous or Stuffed squid",  # two options named
        '{"explanation": "no idea"}',  # JSON without an answer
        '{"explanation": "cut off at option 3',  # truncated JSON: its digits are not an answer
        '{"answer": true}',
        '{"answer": 2.5}',
        "<think>the model ran out of tokens at option 2",
        "9" * 5000,  # beyond int()'s digit limit, and no option anyway
    ],
)
def test_default_leaves_unreadable_answers_unparsed(raw):
    parsed = parse_choice(raw, prompt_text=prompt("0", "en"))
    assert (parsed.option, parsed.rule, parsed.parsed) == (None, None, False)


def test_an_option_that_is_a_prefix_of_another_is_not_read_inside_it():
    # WorldCuisines 151: 3. Puto, 4. Puto seco
    text = prompt("151", "en")
    assert parse_choice("It is Puto seco.", prompt_text=text).option == 4
    assert parse_choice("It is Puto.", prompt_text=text).option == 3
    # Both named: "Puto seco" is taken out first and "Puto" is still there, so it is ambiguous.
    assert parse_choice("Puto, not Puto seco", prompt_text=text).option is None


def test_a_real_sentence_answer_is_read_by_its_option_mention():
    # llama-3.2-11b's answer that the WorldCuisines scorer logged as unparsable (error_mc.txt).
    raw = "The common name for this dish in France is Pain de campagne."
    parsed = parse_choice(raw, prompt_text=prompt("137", "en"))
    assert (parsed.option, parsed.rule) == (4, ChoiceRule.OPTION_MENTION)
    assert parse_choice(raw, prompt_text=prompt("137", "en"), mode="parity").parsed is False


def test_option_text_is_matched_against_options_not_the_question():
    # ja_casual 225: option 4 フラン also occurs in the question's フランス料理.
    parsed = parse_choice("フラン", prompt_text=prompt("225", "ja_casual"))
    assert (parsed.option, parsed.rule) == (4, ChoiceRule.OPTION_TEXT)


def test_two_options_with_the_same_text_stay_ambiguous():
    # ar 53 lists صلصة مولي as both option 3 and option 4.
    assert parse_choice("صلصة مولي", prompt_text=prompt("53", "ar")).option is None


def test_an_exact_option_text_wins_over_the_number_inside_it():
    options = ("Apple pie", "Brownie", "7 Up cake", "Cheesecake", "Donut")
    assert parse_choice("7 Up cake", options=options).option == 3
    assert parse_choice("It must be the 7 Up cake", options=options).option == 3  # 7 names no option


def test_explicit_options_take_precedence_over_the_prompt():
    parsed = parse_choice("Pho", options=("Ramen", "Pho"), prompt_text=prompt("0", "en"))
    assert parsed.option == 2


# --- the reference cascade (parity) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("qa_id", "lang", "raw", "option", "rule"),
    [
        # Step 3 reads the first integer of the raw text: inside the reasoning block or the explanation.
        ("0", "ja_casual", "<think>1番は違う</think>2", 1, ChoiceRule.FIRST_INTEGER),
        ("0", "en", '{"explanation": "Of the 5 dishes", "answer": 2}', 5, ChoiceRule.FIRST_INTEGER),
        # Step 1 is Python's int().
        ("0", "en", " -1\n", -1, ChoiceRule.INTEGER),
        ("0", "en", "1_0", 10, ChoiceRule.INTEGER),
        ("0", "en", "2.5 Makdous", 2, ChoiceRule.NUMBERED),
        # Step 4: str.find in the whole prompt, then the character three places before the hit.
        ("85", "en", "Wat", 3, ChoiceRule.OPTION_TEXT),  # found inside 3. Waterblommetjiebredie
        (
            "225",
            "ja_casual",
            "フラン",
            None,
            ChoiceRule.OPTION_TEXT,
        ),  # found in the question: prompt[-1] == "."
        (
            "225",
            "en",
            "",
            5,
            ChoiceRule.OPTION_TEXT,
        ),  # "" is found at 0: prompt[-3] is the 5 of "(1,2,3,4,5)."
        ("0", "en", "Makdous.", 3, ChoiceRule.OPTION_TEXT),  # dots are removed before the search
        ("53", "ar", "صلصة مولي", 3, ChoiceRule.OPTION_TEXT),  # the first of two equal options
    ],
)
def test_parity_reproduces_the_worldcuisines_cascade(qa_id, lang, raw, option, rule):
    parsed = parse_choice(raw, prompt_text=prompt(qa_id, lang), mode="parity")
    assert (parsed.option, parsed.rule, parsed.answer_text) == (option, rule, raw)


def test_parity_needs_the_prompt_for_its_option_text_rule():
    assert parse_choice("Makdous", mode="parity").parsed is False
    assert parse_choice("9" * 5000, prompt_text=prompt("0", "en"), mode="parity").parsed is False


def test_parity_never_scores_an_option_text_hit_as_correct():
    # The reference stores prompt[hit - 3] as a one-character string and compares it with the integer
    # gold answer, so "Crêpe" (option 5, the gold answer of item 225) counts as wrong.
    assert grade_choice(record("225", "en", "Crêpe"), mode="parity").correct is False
    assert grade_choice(record("225", "en", "Crêpe")).correct is True
    assert grade_choice(record("225", "en", "5"), mode="parity").correct is True


# --- scoring a run --------------------------------------------------------------------------------

RUN = [
    record("0", "en", "2"),  # type 1, gold 2: correct
    record("151", "en", "Puto seco"),  # type 1, gold 3: option 4, wrong
    record("85", "en", "1"),  # type 4, gold 1: correct
    record("266", "en", "Puto bumbong"),  # type 4, gold 1: option 2, wrong
    record("137", "en", "no idea"),  # type 3, gold 2: unparsable
    record("225", "en", "Crêpe"),  # type 3, gold 5: correct (parity: wrong)
    record("300", "en", '{"answer": 2}'),  # type 2, gold 2: correct
    record("0", "ar", "2"),  # type 1, gold 2: correct
    record("151", "ar", "3"),  # type 1, gold 3: correct
    record("85", "ar", "2"),  # type 4, gold 1: wrong
    record("137", "ar", "2"),  # type 3, gold 2: correct
    record("300", "ar", "5"),  # type 2, gold 2: wrong
]


def test_default_scores_per_language_per_type_macro_and_micro():
    result = score_choices(RUN)
    # Accuracy per (type, language):
    #   type 1: en 1/2, ar 2/2 -> 0.75    type 2: en 1/1, ar 0/1 -> 0.5
    #   type 3: en 1/2, ar 1/1 -> 0.75    type 4: en 1/2, ar 0/1 -> 0.25
    # macro = (0.75 + 0.5 + 0.75 + 0.25) / 4 = 0.5625; micro = 7 / 12.
    assert result.macro_by_prompt_type == {"1": 0.75, "2": 0.5, "3": 0.75, "4": 0.25}
    assert result.macro == pytest.approx(0.5625)
    assert result.micro == pytest.approx(7 / 12)
    assert (result.n, result.overall.correct, result.unparsable) == (12, 7, 1)
    assert result.by_language["en"].as_dict() == {"n": 7, "correct": 4, "unparsable": 1, "accuracy": 4 / 7}
    assert result.by_language["ar"].accuracy == pytest.approx(3 / 5)
    assert {key: group.accuracy for key, group in result.by_prompt_type.items()} == pytest.approx(
        {"1": 3 / 4, "2": 1 / 2, "3": 2 / 3, "4": 1 / 3}
    )
    assert result.by_prompt_type_and_language["3"]["en"].unparsable == 1
    assert result.rules == {"integer": 7, "json_number": 1, "option_text": 3}
    assert list(result.by_language) == ["ar", "en"]


def test_parity_scores_the_same_run_as_the_worldcuisines_scorer():
    result = score_choices(RUN, mode="parity")
    # Differences from the default: "Crêpe" is an option-text hit (never correct), '{"answer": 2}' is
    # read by the first-integer rule. Percentages per (type, language):
    #   type 1: en 50.0, ar 100.0 -> 75.0   type 2: en 100.0, ar 0.0 -> 50.0
    #   type 3: en 0.0, ar 100.0 -> 50.0    type 4: en 50.0, ar 0.0 -> 25.0
    # avg_score_all = (75 + 50 + 50 + 25) / 4 = 50.0 -> 0.5; micro = 6 / 12.
    assert result.macro_by_prompt_type == {"1": 0.75, "2": 0.5, "3": 0.5, "4": 0.25}
    assert result.macro == 0.5
    assert result.micro == 0.5
    assert result.rules == {"first_integer": 1, "integer": 7, "option_text": 3}
    assert result.mode == "parity"


def test_parity_rounds_like_the_reference_and_the_default_does_not():
    options = ("A", "B")
    records = [
        ChoiceRecord(f"{lang}{index}", lang, "1", "1" if index == 0 else "2", 1, options)
        for lang in ("xx", "yy")
        for index in range(3)
    ]
    # Each language is 1/3 correct: the reference rounds 33.333... to 33.33 at every level.
    assert score_choices(records, mode="parity").macro == 0.3333
    assert score_choices(records).macro == pytest.approx(1 / 3, abs=1e-12)
    assert score_choices(records).macro != 0.3333


def test_items_carry_the_parsed_answer_for_the_run_folder():
    result = score_choices(RUN)
    stored = {item.item_id: item.as_dict() for item in result.items}
    assert stored["151-en"] == {
        "item_id": "151-en",
        "language": "en",
        "prompt_type": "1",
        "parsed_option": 4,
        "rule": "option_text",
        "correct": False,
    }
    assert stored["137-en"]["rule"] is None
    json.dumps(result.as_dict())
    assert "items" not in result.as_dict()


def test_integer_prompt_types_are_keyed_as_text():
    result = score_choices([record("0", "en", "2", prompt_type=1)])
    assert list(result.by_prompt_type) == ["1"]
    assert result.macro == 1.0


def test_an_empty_answer_is_a_wrong_answer_not_an_input_error():
    result = score_choices([record("0", "en", ""), record("0", "ar", "2")])
    assert (result.unparsable, result.micro) == (1, 0.5)


# --- bad input ------------------------------------------------------------------------------------


def test_no_records_is_an_error():
    with pytest.raises(MetricInputError, match="none were given"):
        score_choices([])


def test_duplicate_ids_are_refused_with_counts_and_examples():
    duplicate = record("0", "ar", "2", item_id="0-en")
    with pytest.raises(MetricInputError) as raised:
        score_choices([record("0", "en", "2"), duplicate])
    assert "1 duplicate item ids (e.g. '0-en' (2 times))" in str(raised.value)
    assert "{qa_id}-{lang}" in str(raised.value)


def test_missing_outputs_unknown_languages_and_bad_gold_options_are_reported_together():
    records = [
        record("0", "en", None),
        record("0", "ar", math.nan),
        record("151", "en", "3", language="klingon"),
        record("137", "en", "2", gold_option=5),  # 137 has four options
        record("85", "en", "1", gold_option=True),
        record("266", "en", "1", prompt_type=""),
    ]
    with pytest.raises(MetricInputError) as raised:
        score_choices(records, languages={"en", "ar"})
    message = str(raised.value)
    assert "2 missing model outputs (e.g. '0-en', '0-ar')" in message
    assert "1 unknown languages (e.g. 'klingon' in '151-en')" in message
    assert "1 gold options out of range (e.g. '137-en': 5 of 4 options)" in message
    assert "1 gold options that are not integers" in message
    assert "1 records without a prompt type" in message


def test_option_lists_must_be_text():
    with pytest.raises(MetricInputError, match="option lists that are empty or not sequences of text"):
        score_choices([record("0", "en", "1", options=())])
    with pytest.raises(MetricInputError, match="option lists"):
        score_choices([record("0", "en", "1", options="ABCDE")])


def test_an_unknown_mode_is_refused():
    with pytest.raises(MetricInputError, match="Unknown multiple-choice scoring mode 'strict'"):
        parse_choice("1", mode="strict")
    with pytest.raises(MetricInputError):
        score_choices([record("0", "en", "1")], mode="strict")
