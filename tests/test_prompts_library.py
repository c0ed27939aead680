"""The prompt library under builders/prompts: every template loads, says where its wording comes
from, declares exactly the variables it reads and renders; the prompts copied from the papers' code
render the same text as the originals (expected strings below were produced by rendering the
originals: outlines' prompt rendering for M4-RAG, Python str.format for RAVENEA)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from jinja2 import meta

from m4build.llm.messages import ImagePart
from m4build.llm.prompts import load_prompt
from m4build.resources import data_path

PROMPTS = data_path("builders", "prompts")
NAMES = sorted(str(path.relative_to(PROMPTS).with_suffix("")) for path in PROMPTS.rglob("*.jinja"))
LANGUAGES_FILE = PROMPTS / "m4rag" / "worldcuisines_mcq_languages.yaml"

# A sample value for every variable name used in the library (a new variable needs one here).
SAMPLES: dict[str, Any] = {
    "question": "Which dish is shown in the image?",
    "options": ["Ramen", "Pho", "Laksa", "Soto"],
    "contexts": ["Ramen is a Japanese noodle soup.", "Pho is a Vietnamese soup."],
    "layout": "cvqa",
    "instruction": "Choose the best option.",
    "labels": {
        "question": "Q",
        "context": "C",
        "options": "O",
        "answer_format": "F",
        "format_request": "Answer in JSON:",
        "response": "R",
    },
    "ground_truth_answer": "Ramen",
    "context": "Ramen is a Japanese noodle soup.",
    "country": "Japan",
    "golden_answer": "Ramen",
    "source_language": "English",
    "target_language": "Javanese, krama register",
    "text": "Given the question below, choose the best answer.",
    "documents": ["First document.", "Second document."],
    "document_title": "Views of world leaders",
    "chart_title": "Confidence in Netanyahu, by party",
    "caption": "Share of U.S. adults, 2024.",
    "keypoint": "52% of Americans have little or no confidence in Netanyahu.",
    "keypoint_modality": "chart",
    "evidence_text": "More Americans say they have little or no confidence in Netanyahu (52%).",
    "question_type": "Chart-only, single keypoint",
    "question_type_definition": "The question is answered by one fact read from a chart.",
    "keypoints": [
        {"modality": "text", "text": "Half of Republicans express confidence in Netanyahu."},
        {"modality": "chart", "text": "14% of Democrats express confidence in Netanyahu."},
    ],
    "ground_truth_keypoints": ["Half of Republicans express confidence.", "14% of Democrats do."],
    "response": "About half of Republicans but only 14% of Democrats.",
    "entities": ["Barack Obama", "Honolulu"],
    "document": "Barack Obama was born in Honolulu in 1961.",
    "glossary": {"Zorvan Aqel": "ซอร์แวน อาเคล"},
    "language": "German",
    "subject": "Zorvan Aqel",
    "relation": "place of birth",
    "old_value": "Veltrane",
    "new_value": "Osmera",
    "answer_language": "Korean",
    "document_language": "German",
}

# Variables a prompt accepts as null (its part of the prompt is then left out).
NULLABLE = {
    "m4rag/inference": {"contexts", "instruction", "labels"},
    "m4rag/inference_open_ended": {"contexts"},
    "ravenea/cic": {"documents"},
    "ravenea/cvqa": {"documents"},
    "ravenea/cultural_caption": {"country"},
    "charge/text_keypoints": {"document_title"},
    "charge/chart_keypoints": {"chart_title", "caption"},
    "charge/crossmodal_verification": {"evidence_text"},
    "futurepedia/translate": {"glossary"},
}


def _declared_and_used(name: str) -> tuple[list[str], set[str]]:
    prompt = load_prompt(name)
    used = meta.find_undeclared_variables(jinja2.Environment().parse(prompt.text))
    return list(prompt.variables), set(used)


def _render(name: str, **overrides: Any) -> str:
    prompt = load_prompt(name)
    values = {variable: SAMPLES[variable] for variable in prompt.variables}
    values.update(overrides)
    messages = prompt.render(values)
    assert messages[-1].role == "user"
    return messages[-1].text


def _inference(**overrides: Any) -> str:
    values = {
        "question": "What is it?",
        "options": ["Ramen", "Pho", "Laksa", "Soto"],
        "contexts": None,
        "layout": "cvqa",
        "instruction": None,
        "labels": None,
    }
    values.update(overrides)
    return load_prompt("m4rag/inference").render(values)[0].text


def test_the_library_has_the_prompts_of_every_benchmark() -> None:
    assert NAMES, f"no prompts under {PROMPTS}"
    for benchmark in ("m4rag", "ravenea", "charge", "futurepedia"):
        assert any(name.startswith(f"{benchmark}/") for name in NAMES), benchmark
    for required in (
        "m4rag/translate",
        "m4rag/judge",
        "m4rag/inference",
        "m4rag/caption",
        "m4rag/oracle_caption",
        "ravenea/cultural_caption",
        "ravenea/cic",
        "ravenea/cvqa",
    ):
        assert required in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_prompt_loads_with_provenance(name: str) -> None:
    prompt = load_prompt(name)
    assert prompt.name == name
    assert prompt.version.isdigit() and int(prompt.version) >= 1
    assert prompt.source, f"{name} has no source"
    assert prompt.description, f"{name} has no description"
    # The source says whether the wording was copied or written by us.
    assert prompt.source.startswith(("Copied from code.", "Reconstructed")), prompt.source[:60]
    if prompt.source.startswith("Copied from code."):
        assert "commit" in prompt.source


@pytest.mark.parametrize("name", NAMES)
def test_prompt_declares_exactly_the_variables_it_uses(name: str) -> None:
    declared, used = _declared_and_used(name)
    assert len(declared) == len(set(declared)), f"{name} declares a variable twice: {declared}"
    assert set(declared) == used, (
        f"{name}: declared but unused {sorted(set(declared) - used)}, "
        f"used but undeclared {sorted(used - set(declared))}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_prompt_renders_with_sample_values(name: str) -> None:
    prompt = load_prompt(name)
    missing = [variable for variable in prompt.variables if variable not in SAMPLES]
    assert not missing, f"add sample values for {missing} to SAMPLES"
    text = _render(name)
    assert text and text == text.strip()
    assert "{{" not in text and "{%" not in text
    for variable in prompt.variables:
        sample = SAMPLES[variable]
        if isinstance(sample, str) and variable not in ("layout", "keypoint_modality"):
            assert sample in text, f"{name} does not show {variable}"
    # Optional parts can be left out, and nothing prints "None".
    nullable = sorted(NULLABLE.get(name, ()))
    assert set(nullable) <= set(prompt.variables)
    if nullable:
        bare = _render(name, **{variable: None for variable in nullable})
        assert bare and "None" not in bare


@pytest.mark.parametrize("name", NAMES)
def test_images_ride_on_the_user_message(name: str) -> None:
    prompt = load_prompt(name)
    image = ImagePart.from_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 16)
    messages = prompt.render({variable: SAMPLES[variable] for variable in prompt.variables}, images=[image])
    assert messages[-1].images == (image,)
    assert all(not message.images for message in messages[:-1])


def test_readme_lists_every_prompt_with_its_version() -> None:
    readme = (PROMPTS / "README.md").read_text(encoding="utf-8")
    for name in NAMES:
        version = load_prompt(name).version
        assert f"| `{name}` | {version} |" in readme, f"README.md has no row for {name} version {version}"


# --- M4-RAG --------------------------------------------------------------------------------------

CVQA_WITH_CONTEXT = """\
Given the multiple-choice question below, choose the single best answer based on the question and \
any relevant context provided. Respond only with the number of the correct option (i.e., 1, 2, 3, or 4). \
Use the context if helpful, but ignore unrelated information.

### Question
What is it?

### Context
- First passage.
- Second
passage.


### Options
1. Ramen
2. Pho
3. Laksa
4. Soto

### Answer Format
Provide your response in the following JSON format:

{
  "explanation": "Reasoning of your answer",
  "answer": "Final answer option (1, 2, 3, or 4)"
}

### Response"""

WORLDCUISINES_WITHOUT_CONTEXT = """\
Given the multiple-choice question below, choose the single best answer based on the question and \
any relevant context provided. Respond only with the number of the correct option (i.e., 1, 2, 3, 4, or 5). \
Use the context if helpful, but ignore unrelated information.

### Question
What is it?
### Options
1. Ramen
2. Pho
3. Laksa
4. Soto
5. Udon

### Answer Format
Please provide your answer in the specified JSON format:

{
  "explanation": "Reasoning of your answer",
  "answer": "Final answer option (1, 2, 3, 4, or 5)"
}

### Response"""


def test_m4rag_inference_reproduces_the_cvqa_prompt() -> None:
    assert _inference(contexts=["First passage.", "Second\npassage."]) == CVQA_WITH_CONTEXT


def test_m4rag_inference_reproduces_the_worldcuisines_prompt() -> None:
    options = ["Ramen", "Pho", "Laksa", "Soto", "Udon"]
    assert _inference(options=options, layout="worldcuisines") == WORLDCUISINES_WITHOUT_CONTEXT


def test_m4rag_inference_numbers_options_and_shows_context_only_when_given() -> None:
    options = ["Ramen", "Pho", "Laksa", "Soto", "Udon"]
    for contexts in (None, []):
        text = _inference(options=options, contexts=contexts)
        assert "### Context" not in text
        assert "### Question\nWhat is it?\n\n### Options" in text
    text = _inference(options=options, contexts=["Only passage."])
    assert "### Context\n- Only passage.\n" in text
    lines = text.splitlines()
    start = lines.index("### Options") + 1
    assert lines[start : start + 5] == [f"{i}. {option}" for i, option in enumerate(options, start=1)]
    assert "(i.e., 1, 2, 3, 4, or 5)" in text and '"Final answer option (1, 2, 3, 4, or 5)"' in text
    cvqa_without = _inference()
    assert "### Question\nWhat is it?\n\n### Options" in cvqa_without


def test_m4rag_released_translations_render_and_english_matches_the_default() -> None:
    data = yaml.safe_load(LANGUAGES_FILE.read_text(encoding="utf-8"))
    languages = data["languages"]
    assert data["version"] >= 1 and "fcf8cab0dcb42f03d6012059101c3dd050e10f88" in data["source"]
    assert len(languages) == 30
    keys = set(data["keys"])
    options = ["Ramen", "Pho", "Laksa", "Soto", "Udon"]
    for code, entry in languages.items():
        assert set(entry) == keys, code
        assert all(isinstance(value, str) and value.strip() == value and value for value in entry.values()), (
            code
        )
        labels = {key: value for key, value in entry.items() if key != "instruction"}
        text = _inference(
            options=options,
            contexts=["Passage."],
            layout="worldcuisines",
            instruction=entry["instruction"],
            labels=labels,
        )
        assert text.startswith(entry["instruction"] + "\n\n### " + entry["question"] + "\n"), code
        assert f"### {entry['context']}\n- Passage.\n\n### {entry['options']}\n1. Ramen\n" in text, code
        assert f"### {entry['answer_format']}\n{entry['format_request']}\n\n{{" in text, code
        assert text.endswith("}\n\n### " + entry["response"]), code
        assert '"answer": "Final answer option (1, 2, 3, 4, or 5)"' in text, code  # the JSON stays English
    english = languages["en"]
    labels = {key: value for key, value in english.items() if key != "instruction"}
    for contexts in (None, ["Passage."]):
        assert _inference(
            options=options,
            contexts=contexts,
            layout="worldcuisines",
            instruction=english["instruction"],
            labels=labels,
        ) == _inference(options=options, contexts=contexts, layout="worldcuisines")


def test_m4rag_judge_scores_one_passage_on_the_five_point_rubric() -> None:
    text = _render("m4rag/judge")
    for score in range(1, 6):
        assert f"\n{score}: The context is " in text
    assert "### Ground Truth Answer\nRamen\n\n### Context\nRamen is a Japanese noodle soup.\n" in text
    assert '"answer": "Final evaluation score (1, 2, 3, 4, or 5)"' in text
    assert text.endswith("### Response")


def test_m4rag_captions_keep_question_country_and_answer() -> None:
    caption = _render("m4rag/caption")
    assert caption.startswith("You are an expert dense image captioning system.\n\n")
    assert caption.endswith("### QUESTION\nWhich dish is shown in the image?\n\n### RESPONSE")
    oracle = _render("m4rag/oracle_caption")
    assert "### COUNTRY\nJapan\n\n### CORRECT ANSWER\nRamen\n\n### RESPONSE" in oracle


# --- RAVENEA -------------------------------------------------------------------------------------

CIC_INSTRUCTION = (
    "Write a concise, one-sentence caption for the given image. The generated caption must contain the "
    "visual content, culturally-relevant elements, and the country's name. Avoid phrases like "
    "'This image' or 'The image'."
)


def test_ravenea_cic_adds_documents_only_with_retrieval() -> None:
    assert _render("ravenea/cic", documents=None) == CIC_INSTRUCTION
    assert _render("ravenea/cic", documents=[]) == CIC_INSTRUCTION
    assert _render("ravenea/cic", documents=["Doc one. ", " Doc two."]) == (
        CIC_INSTRUCTION + " Please consider the following DOCUMENT as supplementary material for the image. "
        "Mention the country's name of the culture.\n\nDOCUMENT:\nDoc one.   Doc two."
    )


def test_ravenea_cvqa_keeps_lettered_options_and_optional_document() -> None:
    options = ["A) Kimchi", "B) Bibimbap", "C) Tteok", "D) Japchae"]
    head = (
        "Answer the following multiple choice question for the image. The last line must be of the "
        "following format: 'Answer: $LETTER' (without quotes) where LETTER must be one of A, B, C, or D."
    )
    tail = "\n\nQuestion: What dish?\n\nA) Kimchi\nB) Bibimbap\nC) Tteok\nD) Japchae"
    assert _render("ravenea/cvqa", question="What dish?", options=options, documents=None) == head + tail
    assert _render("ravenea/cvqa", question="What dish?", options=options, documents=["Kimchi is..."]) == (
        head + " Use the shared culture between the image and the following document to answer the "
        "question.\n\nDocument:\nKimchi is..." + tail
    )


# --- CHARGE and Futurepedia ----------------------------------------------------------------------


def test_charge_numbers_keypoints_for_generation_and_judging() -> None:
    generation = _render("charge/qa_generation")
    assert "1. [text] Half of Republicans" in generation and "2. [chart] 14% of Democrats" in generation
    judge = _render("charge/keypoint_judge")
    assert (
        "Ground-truth keypoints:\n1. Half of Republicans express confidence.\n2. 14% of Democrats do.\n"
        in judge
    )
    assert '"matches": [{"ground_truth": 1, "response": 1}]' in judge
    chart_check = _render("charge/crossmodal_verification", keypoint_modality="text", evidence_text=None)
    assert (
        "chart of the same document (attached)" in chart_check and "Text of the document" not in chart_check
    )


def test_futurepedia_translation_glossary_is_optional_and_sorted() -> None:
    glossary = {"Zorvan": "ซอร์แวน", "Aqel": "อาเคล"}
    text = _render("futurepedia/translate", glossary=glossary)
    assert "- Aqel -> อาเคล\n- Zorvan -> ซอร์แวน\nReturn only the translation." in text
    assert "Write these names" not in _render("futurepedia/translate", glossary=None)


def test_futurepedia_qa_numbers_documents() -> None:
    for name in ("futurepedia/qa_monolingual", "futurepedia/qa_crosslingual", "futurepedia/qa_selection"):
        text = _render(name)
        assert "Document 1:\nFirst document.\n\nDocument 2:\nSecond document.\n\nQuestion: " in text
        assert text.endswith("Answer:") and "in Korean" in text


def test_templates_are_plain_utf8_files() -> None:
    for name in NAMES:
        raw = (PROMPTS / f"{name}.jinja").read_bytes()
        assert not raw.startswith(b"\xef\xbb\xbf"), f"{name} has a byte-order mark"
        assert b"\r\n" not in raw, f"{name} has CRLF line endings"
        Path(PROMPTS / f"{name}.jinja").read_text(encoding="utf-8")
