"""``m4build annotate export|import ravenea``: tasks out, labels back, graded judgments and agreement.

Each test builds a small RAVENEA run folder as ``notes/ravenea_contract.md`` lays it out: three images
drawn with PIL, four real English Wikipedia articles (their text parsed from the packaged sample,
``corpora/sample/wikipedia/articles.parquet``; see its ATTRIBUTION.md) and the 3 x 4 candidate pairs.
Three simulated annotators answer: alice and bob in one Label Studio JSON export (alice's
``completed_by`` expanded to an e-mail, bob's a bare user id), carol in a CSV sheet covering two of
the three images. Their answers agree on most pairs, disagree on some, and tie on two questions.

The commands run through a tiny Typer app that mounts ``annotate_app`` the way ``m4build`` does;
bad input must surface as an ``M4BuildError`` with the right exit code.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import typer
from PIL import Image
from typer.testing import CliRunner

from m4build.annotation.ravenea.csv_io import TEXT_LIMIT, shortened
from m4build.annotation.ravenea.grades import culture_relevance, majority
from m4build.annotation.ravenea.schema import ANSWERS, QUESTIONS, normalize_answer, pair_key
from m4build.cli.annotate import annotate_app
from m4build.errors import ExitCode, InputFileError, M4BuildError, UsageError
from m4build.metrics.agreement import cohen_kappa
from m4build.resources import data_path
from m4build.text.sections import parse_sections

SAMPLE_ARTICLES = data_path("corpora", "sample", "wikipedia", "articles.parquet")
ARTICLE_TITLES = {"Matryoshka doll": 331080, "Vitis": 12225681, "Cat": 6678, "Dog": 4269567}
MATRYOSHKA, VITIS, CAT, DOG = ARTICLE_TITLES.values()

IMAGES = {  # file_name: (country, category, caption, colour)
    "russia_matryoshka.jpg": (
        "Russia",
        "art",
        "Painted wooden nesting dolls at a market stall.",
        (200, 30, 30),
    ),
    "georgia_vineyard.jpg": (
        "Georgia",
        "food",
        "Grapevines on a terraced vineyard in Kakheti.",
        (40, 140, 40),
    ),
    "japan_cat_cafe.jpg": (
        "Japan",
        "daily life",
        "A cat resting on a cushion in a Tokyo cat cafe.",
        (30, 30, 200),
    ),
}
RUSSIA, GEORGIA, JAPAN = IMAGES

# BM25 order per image (rank 1 first) and the seeded shuffle annotators see: deliberately different.
BM25_ORDER = {
    RUSSIA: [MATRYOSHKA, DOG, CAT, VITIS],
    GEORGIA: [VITIS, CAT, DOG, MATRYOSHKA],
    JAPAN: [CAT, DOG, VITIS, MATRYOSHKA],
}
SHUFFLED = {
    RUSSIA: [CAT, MATRYOSHKA, VITIS, DOG],
    GEORGIA: [DOG, MATRYOSHKA, CAT, VITIS],
    JAPAN: [VITIS, CAT, MATRYOSHKA, DOG],
}

# Answers per annotator, one letter per question (country, cultural, visual): y / n / c(annot determine).
ALICE = {
    (RUSSIA, MATRYOSHKA): "yyy", (RUSSIA, VITIS): "nnn", (RUSSIA, CAT): "nnn", (RUSSIA, DOG): "nnn",
    (GEORGIA, MATRYOSHKA): "nnn", (GEORGIA, VITIS): "yyy", (GEORGIA, CAT): "nnn", (GEORGIA, DOG): "nnn",
    (JAPAN, MATRYOSHKA): "nnn", (JAPAN, VITIS): "nnn", (JAPAN, CAT): "ncy", (JAPAN, DOG): "nnn",
}  # fmt: skip
BOB = {**ALICE, (GEORGIA, VITIS): "cyy", (JAPAN, CAT): "nyy", (RUSSIA, DOG): "nny"}
CAROL = {pair: answers for pair, answers in ALICE.items() if pair[0] != GEORGIA} | {(JAPAN, CAT): "yny"}
LETTERS = {"y": "yes", "n": "no", "c": "cannot_determine"}
SHOWN = {"yes": "Yes", "no": "No", "cannot_determine": "Cannot be determined"}

app = typer.Typer(pretty_exceptions_enable=False)
app.add_typer(annotate_app, name="annotate")


@app.callback()
def root() -> None:
    """The stand-in for ``m4build``."""


# --- the run folder --------------------------------------------------------------------------------


def read_article_texts() -> dict[int, dict]:
    """The four articles as ``articles.parquet`` rows, their text parsed from the sample's HTML."""
    rows = pq.read_table(SAMPLE_ARTICLES).to_pylist()
    texts = {}
    for row in rows:
        if row["wiki"] == "enwiki" and row["title"] in ARTICLE_TITLES:
            sections = parse_sections(row["html"], title=row["title"])
            texts[row["page_id"]] = {
                "enwiki_id": row["page_id"],
                "title": row["title"],
                "text": "\n\n".join(section.text for section in sections),
                "url": row["url"],
                "revision_id": row["revision_id"],
                "retrieved_at": "2025-01-01T00:00:00Z",
            }
    assert sorted(texts) == sorted(ARTICLE_TITLES.values())
    return texts


def build_run(folder: Path, article_texts: dict[int, dict]) -> Path:
    """A RAVENEA run folder per the contract: images, instances, articles, candidates."""
    (folder / "images").mkdir(parents=True)
    (folder / "data").mkdir()
    instances = []
    for file_name, (country, category, caption, colour) in IMAGES.items():
        Image.new("RGB", (8, 8), colour).save(folder / "images" / file_name, format="JPEG")
        instances.append(
            {
                "file_name": file_name, "image_sha256": "0" * 64, "country": country, "category": category,
                "task_type": "cIC", "source": "folder", "generate_caption": caption, "caption_model": "test",
                "caption_prompt": None, "caption_prompt_version": None, "caption_error": None, "question": None,
                "options": None, "answer": None, "human_captions": None, "split": "test",
            }
        )  # fmt: skip
    pq.write_table(pa.Table.from_pylist(instances), folder / "data" / "instances.parquet")
    pq.write_table(pa.Table.from_pylist(list(article_texts.values())), folder / "data" / "articles.parquet")
    candidates = [
        {
            "file_name": file_name,
            "enwiki_id": enwiki_id,
            "bm25_rank": BM25_ORDER[file_name].index(enwiki_id) + 1,
            "bm25_score": 10.0 - BM25_ORDER[file_name].index(enwiki_id),
            "annotation_order": SHUFFLED[file_name].index(enwiki_id),
        }
        for file_name in IMAGES
        for enwiki_id in BM25_ORDER[file_name]
    ]
    schema = pa.schema(
        [("file_name", pa.string()), ("enwiki_id", pa.int64()), ("bm25_rank", pa.int32()),
         ("bm25_score", pa.float64()), ("annotation_order", pa.int32())]
    )  # fmt: skip
    pq.write_table(pa.Table.from_pylist(candidates, schema=schema), folder / "data" / "candidates.parquet")
    return folder


@pytest.fixture(scope="module")
def article_texts() -> dict[int, dict]:
    return read_article_texts()


@pytest.fixture
def run(tmp_path: Path, article_texts: dict[int, dict]) -> Path:
    return build_run(tmp_path / "run", article_texts)


# --- running the commands --------------------------------------------------------------------------


def invoke(*args: str | Path) -> str:
    """Run an annotate command that must succeed; return what it printed."""
    result = CliRunner().invoke(app, ["annotate", *map(str, args)], env={"COLUMNS": "220"})
    if result.exit_code != 0:
        raise AssertionError(f"exit {result.exit_code}: {result.exception!r}\n{result.output}")
    return result.output


def failure(*args: str | Path) -> tuple[M4BuildError, str]:
    """Run an annotate command that must fail with an M4BuildError (what main() maps to an exit code)."""
    result = CliRunner().invoke(app, ["annotate", *map(str, args)], env={"COLUMNS": "220"})
    assert result.exit_code != 0
    assert isinstance(result.exception, M4BuildError), f"{result.exception!r}\n{result.output}"
    return result.exception, result.output


# --- annotators' files -----------------------------------------------------------------------------


def answers_of(letters: str) -> dict[str, str]:
    return {question: LETTERS[letter] for question, letter in zip(QUESTIONS, letters)}


def result_items(answers: dict[str, str]) -> list[dict]:
    """Label Studio result items for the three questions, as the export writes them (alias values)."""
    return [
        {
            "id": f"r-{question}",
            "from_name": question,
            "to_name": "article",
            "type": "choices",
            "origin": "manual",
            "value": {"choices": [answer]},
        }
        for question, answer in answers.items()
    ]


def label_studio_export(run: Path, tmp_path: Path, annotators: list[tuple[object, dict]], name: str) -> Path:
    """A Label Studio JSON export of the exported tasks: per task, one annotation per annotator.

    ``annotators`` pairs each ``completed_by`` value (a user id, or the expanded user object) with
    that annotator's answers; pairs an annotator has no answers for get no annotation from them.
    """
    out = tmp_path / "ls"
    invoke("export", "ravenea", run, "--format", "label-studio", "--out", out)
    tasks = json.loads((out / "tasks.json").read_text(encoding="utf-8"))
    exported = []
    for task_id, task in enumerate(tasks, start=1):
        pair = (task["data"]["file_name"], task["data"]["enwiki_id"])
        annotations = [
            {
                "id": task_id * 10 + number,
                "completed_by": completed_by,
                "result": result_items(answers_of(answers[pair])),
                "was_cancelled": False,
                "ground_truth": False,
                "created_at": "2025-03-09T22:16:08.728353Z",
                "updated_at": "2025-03-09T22:16:08.728378Z",
                "lead_time": 4.2,
                "task": task_id,
            }
            for number, (completed_by, answers) in enumerate(annotators)
            if pair in answers
        ]
        exported.append(
            {"id": task_id, "project": 3, "data": task["data"], "annotations": annotations, "predictions": []}
        )
    path = tmp_path / name
    path.write_text(json.dumps(exported), encoding="utf-8")
    return path


def filled_sheet(run: Path, tmp_path: Path, answers: dict, annotator: str, name: str) -> Path:
    """An exported CSV sheet with ``answers`` filled in (displayed wording, as a spreadsheet user types)."""
    out = tmp_path / "csv"
    invoke("export", "ravenea", run, "--format", "csv", "--out", out)
    with open(out / "annotator_01.csv", encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["annotator"] = annotator
        letters = answers.get((row["file_name"], int(row["enwiki_id"])))
        for question in QUESTIONS:
            row[f"answer_{question}"] = SHOWN[LETTERS[letters[QUESTIONS.index(question)]]] if letters else ""
    return write_sheet(tmp_path / name, rows)


def write_sheet(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def judgments(run: Path) -> dict[tuple[str, int], dict]:
    rows = pq.read_table(run / "annotations" / "judgments.parquet").to_pylist()
    return {(row["file_name"], row["enwiki_id"]): row for row in rows}


ALICE_ID = {"id": 3, "email": "alice@example.org", "first_name": "Alice", "last_name": ""}
BOB_ID = 7


# --- vocabulary and resolution ---------------------------------------------------------------------


def test_answers_are_normalized_only_in_case_spacing_and_wording() -> None:
    assert normalize_answer("Yes") == "yes"
    assert normalize_answer(" NO ") == "no"
    assert normalize_answer("Cannot be determined") == "cannot_determine"
    assert normalize_answer("cannot_determine") == "cannot_determine"
    assert normalize_answer("cannot  determine") == "cannot_determine"
    for outside in ("maybe", "y", "1", "", None, 1):
        assert normalize_answer(outside) is None


def test_majority_resolves_ties_to_cannot_determine() -> None:
    assert majority(["yes", "yes", "no"]) == ("yes", False)
    assert majority(["no"]) == ("no", False)
    assert majority(["yes", "no"]) == ("cannot_determine", True)
    assert majority(["yes", "no", "cannot_determine"]) == ("cannot_determine", True)
    assert majority(["yes", "yes", "no", "no", "cannot_determine"]) == ("cannot_determine", True)
    assert majority(["cannot_determine", "cannot_determine", "yes"]) == ("cannot_determine", False)


def test_culture_relevance_adds_one_point_per_yes_and_takes_one_per_no() -> None:
    assert culture_relevance({"country": "yes", "cultural": "yes", "visual": "yes"}) == 3
    assert culture_relevance({"country": "no", "cultural": "no", "visual": "no"}) == -3
    assert culture_relevance({"country": "yes", "cultural": "cannot_determine", "visual": "no"}) == 0


# --- export ----------------------------------------------------------------------------------------


def test_label_studio_export_is_in_annotation_order_and_matches_the_import_format(
    run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ls"
    printed = invoke("export", "ravenea", run, "--format", "label-studio", "--out", out, "--annotators", "3")
    assert "Wrote 12 tasks (3 images) for 3 annotator(s)" in printed
    assert "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED=true" in printed
    tasks = json.loads((out / "tasks.json").read_text(encoding="utf-8"))
    # Label Studio's basic import format: a list of {"data": {...}}; nothing else is needed.
    assert all(list(task) == ["data"] for task in tasks)
    order = [(task["data"]["file_name"], task["data"]["enwiki_id"]) for task in tasks]
    assert order == [(image, enwiki_id) for image in sorted(IMAGES) for enwiki_id in SHUFFLED[image]]
    assert order != [(image, enwiki_id) for image in sorted(IMAGES) for enwiki_id in BM25_ORDER[image]]
    first = tasks[0]["data"]
    assert first["pair_key"] == pair_key(GEORGIA, DOG) == f"{GEORGIA}#{DOG}"
    assert first["image"] == f"/data/local-files/?d=images/{GEORGIA}"
    assert first["title"] == "Dog" and first["article"].startswith("The domestic dog")
    assert first["image_country"] == "Georgia" and first["caption"].startswith("Grapevines")
    assert not any("bm25" in key for key in first)

    config = (out / "labeling_config.xml").read_text(encoding="utf-8")
    assert config == data_path("annotation", "ravenea", "labeling_config.xml").read_text(encoding="utf-8")
    # Every $variable of the config is a key of every task; every question is a Choices group whose
    # aliases are exactly the stored answers.
    variables = set(re.findall(r'value="\$(\w+)"', config))
    assert variables <= set(first)
    choices = re.findall(r'<Choices name="(\w+)"(.*?)</Choices>', config, flags=re.DOTALL)
    assert [name for name, _ in choices] == list(QUESTIONS)
    for _, body in choices:
        assert re.findall(r'alias="(\w+)"', body) == list(ANSWERS)

    project = json.loads((out / "project.json").read_text(encoding="utf-8"))
    assert project["maximum_annotations"] == 3 and project["label_config"] == config
    assert project["show_skip_button"] is False and len(project["title"]) <= 50
    assert "Cannot be determined" in (out / "guidelines.md").read_text(encoding="utf-8")


def test_csv_export_writes_one_sheet_per_annotator_with_empty_answers(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "csv"
    invoke("export", "ravenea", run, "--format", "csv", "--out", out, "--annotators", "2",
           "--image-prefix", "http://127.0.0.1:8081/")  # fmt: skip
    raw = (out / "annotator_02.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8 BOM, for spreadsheets
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    assert len(rows) == 12
    assert {row["annotator"] for row in rows} == {"annotator_02"}
    assert all(row[f"answer_{question}"] == "" for row in rows for question in QUESTIONS)
    assert rows[0]["pair_key"] == pair_key(GEORGIA, DOG)
    assert rows[0]["image"] == f"http://127.0.0.1:8081/{GEORGIA}"
    assert (out / "annotator_01.csv").exists() and (out / "guidelines.md").exists()


def test_csv_article_text_is_shortened_to_fit_a_spreadsheet_cell() -> None:
    text = "x" * (TEXT_LIMIT + 5)
    cut = shortened(text)
    assert len(cut) == TEXT_LIMIT and cut.endswith("read the rest at the url)")
    assert shortened("short") == "short"


def test_export_refuses_an_unfinished_run_and_unknown_benchmarks(run: Path, tmp_path: Path) -> None:
    error, _ = failure("export", "cvqa", run, "--format", "csv")
    assert isinstance(error, UsageError) and error.exit_code == ExitCode.USAGE
    error, _ = failure("export", "ravenea", run, "--format", "excel")
    assert isinstance(error, UsageError) and "label-studio, csv" in str(error)
    (run / "images" / JAPAN).unlink()
    error, _ = failure("export", "ravenea", run, "--format", "csv")
    assert isinstance(error, InputFileError) and error.exit_code == ExitCode.INPUT
    assert "1 image file(s) missing under images/" in str(error)
    error, _ = failure("export", "ravenea", tmp_path / "nowhere", "--format", "csv")
    assert isinstance(error, InputFileError) and "candidates.parquet is missing" in str(error)


# --- import ----------------------------------------------------------------------------------------


def test_round_trip_resolves_majorities_ties_and_grades(run: Path, tmp_path: Path) -> None:
    export = label_studio_export(run, tmp_path, [(ALICE_ID, ALICE), (BOB_ID, BOB)], "export.json")
    sheet = filled_sheet(run, tmp_path, CAROL, "carol", "carol.csv")

    printed = " ".join(invoke("import", "ravenea", run, export, sheet).split())
    assert "imported" in printed and "Cohen's kappa per annotator pair" in printed
    assert "Judged pairs: 12 (2 with a tie" in printed
    assert f"{sheet}: 4 rows without answers (not annotated yet)" in printed

    resolved = judgments(run)
    assert len(resolved) == 12
    assert resolved[(RUSSIA, MATRYOSHKA)]["culture_relevance"] == 3
    assert resolved[(RUSSIA, MATRYOSHKA)]["annotator_count"] == 3
    # Japan x Cat: country n/n/y -> no; cultural c/y/n -> three-way tie; visual y/y/y -> yes.
    cat = resolved[(JAPAN, CAT)]
    assert (cat["country"], cat["cultural"], cat["visual"]) == ("no", "cannot_determine", "yes")
    assert cat["tie"] and cat["tied_questions"] == ["cultural"] and cat["culture_relevance"] == 0
    # Georgia x Vitis, two annotators: country y/c ties -> cannot_determine; +0 +1 +1 = 2.
    vitis = resolved[(GEORGIA, VITIS)]
    assert vitis["annotators"] == ["alice@example.org", "label-studio-user-7"]
    assert vitis["country"] == "cannot_determine" and vitis["culture_relevance"] == 2 and vitis["tie"]
    # Russia x Dog: visual n/y/n -> no, no tie; grade -3.
    assert resolved[(RUSSIA, DOG)]["culture_relevance"] == -3 and not resolved[(RUSSIA, DOG)]["tie"]

    imports = sorted((run / "annotations" / "imports").glob("*.parquet"))
    assert len(imports) == 2
    labels = pa.concat_tables([pq.read_table(path) for path in imports])
    assert labels.num_rows == (12 + 12 + 8) * 3
    assert {"annotator", "file_name", "enwiki_id", "question", "answer", "source_file", "record"} <= set(
        labels.column_names
    )

    report = json.loads((run / "annotations" / "agreement.json").read_text(encoding="utf-8"))
    assert report["annotators"] == ["alice@example.org", "carol", "label-studio-user-7"]
    assert report["tied_pairs"] == 2 and report["judged_pairs"] == 12
    assert set(report["agreement"]) == {"all", *QUESTIONS}
    for scope in ("all", *QUESTIONS):
        pairs = {(p["first"], p["second"]): p for p in report["agreement"][scope]["pairs"]}
        alice_bob = pairs[("alice@example.org", "label-studio-user-7")]
        units = [(pair, question) for pair in ALICE for question in QUESTIONS if scope in ("all", question)]
        first = [LETTERS[ALICE[pair][QUESTIONS.index(question)]] for pair, question in units]
        second = [LETTERS[BOB[pair][QUESTIONS.index(question)]] for pair, question in units]
        expected = cohen_kappa(first, second)  # checked against scikit-learn in test_metrics_agreement
        assert alice_bob["shared_units"] == len(units)
        assert alice_bob["cohen_kappa"] == pytest.approx(expected, abs=1e-12)


def test_reimporting_the_same_file_changes_nothing(run: Path, tmp_path: Path) -> None:
    sheet = filled_sheet(run, tmp_path, CAROL, "carol", "carol.csv")
    invoke("import", "ravenea", run, sheet)
    before = pq.read_table(run / "annotations" / "judgments.parquet")
    printed = invoke("import", "ravenea", run, sheet)
    assert "already imported" in printed
    assert len(list((run / "annotations" / "imports").glob("*.parquet"))) == 1
    assert pq.read_table(run / "annotations" / "judgments.parquet").equals(before)
    assert "only 1 annotator" in printed


def test_a_later_export_replaces_an_annotators_earlier_answer(run: Path, tmp_path: Path) -> None:
    first = label_studio_export(run, tmp_path, [(BOB_ID, BOB)], "first.json")
    invoke("import", "ravenea", run, first)
    corrected = {**BOB, (JAPAN, CAT): "nyn"}
    second = label_studio_export(run, tmp_path, [(BOB_ID, corrected)], "second.json")
    invoke("import", "ravenea", run, second)
    assert judgments(run)[(JAPAN, CAT)]["visual"] == "no"
    report = json.loads((run / "annotations" / "agreement.json").read_text(encoding="utf-8"))
    assert report["labels_replaced_by_later_imports"] == 1 and report["labels"] == 36


def test_invalid_records_reject_the_whole_file_and_keep_earlier_imports(run: Path, tmp_path: Path) -> None:
    good = filled_sheet(run, tmp_path, CAROL, "carol", "carol.csv")
    invoke("import", "ravenea", run, good)
    before = pq.read_table(run / "annotations" / "judgments.parquet")
    imports_before = sorted(p.name for p in (run / "annotations" / "imports").iterdir())

    bad = filled_sheet(run, tmp_path, ALICE, "dave", "dave.csv")
    with open(bad, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[0]["pair_key"] = "nowhere.jpg#1"  # row 2 (the header is row 1): unknown pair
    rows[1]["answer_cultural"] = "maybe"  # row 3: outside the allowed answers
    rows[2]["answer_visual"] = ""  # row 4: missing answer
    rows[3]["annotator"] = ""  # row 5: no annotator
    write_sheet(bad, rows)

    error, printed = failure("import", "ravenea", run, bad)
    printed = " ".join(printed.split())
    assert isinstance(error, InputFileError) and error.exit_code == ExitCode.INPUT
    assert "1 of 1 file(s) not imported" in str(error) and "(rejected)" in str(error)
    assert "1 unknown (image, article) pairs (e.g. row 2: nowhere.jpg#1)" in printed
    assert "1 answers outside yes/no/cannot_determine (e.g. row 3: cultural = 'maybe')" in printed
    assert "1 rows with missing answers (e.g. row 4: no visual)" in printed
    assert "1 rows without an annotator (e.g. row 5)" in printed
    assert sorted(p.name for p in (run / "annotations" / "imports").iterdir()) == imports_before
    assert pq.read_table(run / "annotations" / "judgments.parquet").equals(before)

    invoke("import", "ravenea", run, bad, "--skip-invalid")
    labels = pa.concat_tables(
        [pq.read_table(path) for path in (run / "annotations" / "imports").glob("*.parquet")]
    )
    assert labels.filter(pc.equal(labels["annotator"], "dave")).num_rows == (12 - 4) * 3
    assert judgments(run)[(JAPAN, VITIS)]["annotators"] == ["carol", "dave"]


def test_label_studio_records_are_checked_one_by_one(run: Path, tmp_path: Path) -> None:
    export = label_studio_export(run, tmp_path, [(BOB_ID, BOB)], "export.json")
    tasks = json.loads(export.read_text(encoding="utf-8"))
    tasks[0]["annotations"][0]["result"][1]["value"]["choices"] = ["Maybe"]
    del tasks[1]["annotations"][0]["result"][2]  # no answer to the visual question
    tasks[2]["data"]["pair_key"] = "ghost.jpg#5"
    tasks[3]["annotations"][0]["was_cancelled"] = True  # skipped: ignored, not an error
    tasks[4]["annotations"][0]["result"].append(
        {"from_name": "notes", "to_name": "article", "type": "textarea", "value": {"text": ["nice"]}}
    )  # another control: ignored
    tasks[5]["annotations"][0]["completed_by"] = None
    tasks[6]["annotations"] = []
    export.write_text(json.dumps(tasks), encoding="utf-8")

    error, printed = failure("import", "ravenea", run, export)
    printed = " ".join(printed.split())
    assert isinstance(error, InputFileError)
    assert (
        "1 answers outside yes/no/cannot_determine (e.g. task 1 (item 0), annotation 10: cultural = 'Maybe')"
        in printed
    )
    assert "1 annotations with missing answers (e.g. task 2 (item 1), annotation 20: no visual)" in printed
    assert "1 unknown (image, article) pairs (e.g. task 3 (item 2): ghost.jpg#5)" in printed
    assert "1 annotations without completed_by" in printed
    assert "1 skipped (cancelled) annotations" in printed and "1 tasks without annotations" in printed
    assert "1 results of other controls (ignored)" in printed

    printed = invoke("import", "ravenea", run, export, "--skip-invalid")
    assert len(judgments(run)) == 12 - 6  # four invalid, one skipped, one unannotated


def test_malformed_files_are_named_with_where_they_break(run: Path, tmp_path: Path) -> None:
    export = label_studio_export(run, tmp_path, [(BOB_ID, BOB)], "export.json")
    broken = tmp_path / "broken.json"
    broken.write_text(export.read_text(encoding="utf-8")[:500], encoding="utf-8")
    minimal = tmp_path / "minimal.json"
    minimal.write_text(
        json.dumps([{"id": 1, "pair_key": pair_key(JAPAN, CAT), "country": "Yes"}]), encoding="utf-8"
    )
    no_column = tmp_path / "no_column.csv"
    no_column.write_text("pair_key,annotator,answer_country\nx,y,yes\n", encoding="utf-8")
    bad_quotes = tmp_path / "bad_quotes.csv"
    bad_quotes.write_text(
        "pair_key,annotator,answer_country,answer_cultural,answer_visual\n"
        f'{pair_key(JAPAN, CAT)},eve,yes,no,"no\n',
        encoding="utf-8",
    )

    error, printed = failure("import", "ravenea", run, export, broken, minimal, no_column, bad_quotes)
    assert isinstance(error, InputFileError) and "4 of 5 file(s) not imported" in str(error)
    flat = " ".join(printed.split())
    assert f"{broken} is not valid JSON (line 1, column" in flat
    assert "looks like a JSON-MIN export" in flat
    assert "lacks the column(s) answer_cultural, answer_visual" in flat
    assert "is not well-formed CSV (line" in flat
    assert len(judgments(run)) == 12  # the good export went in all the same


def test_annotators_who_disagree_on_everything_are_reported(run: Path, tmp_path: Path) -> None:
    flipped = {"y": "n", "n": "y", "c": "c"}
    opposite = {pair: "".join(flipped[letter] for letter in letters) for pair, letters in ALICE.items()}
    alice = filled_sheet(run, tmp_path, ALICE, "alice", "alice.csv")
    mallory = filled_sheet(run, tmp_path, opposite, "mallory", "mallory.csv")
    printed = " ".join(invoke("import", "ravenea", run, alice, mallory).split())
    assert "warning: alice and mallory disagree on every shared answer on the country question" in printed
    assert "warning: alice and mallory agree no better than chance on all questions (kappa" in printed
    report = json.loads((run / "annotations" / "agreement.json").read_text(encoding="utf-8"))
    pair = report["agreement"]["all"]["pairs"][0]
    assert pair["agreed_units"] == 1 and pair["shared_units"] == 36  # only Japan x Cat's "c" matches
    assert pair["cohen_kappa"] < 0
    assert any("mallory" in warning and "country" in warning for warning in report["warnings"])


def test_import_usage_errors(run: Path, tmp_path: Path) -> None:
    error, _ = failure("import", "worldcuisines", run, tmp_path / "a.json")
    assert isinstance(error, UsageError) and error.exit_code == ExitCode.USAGE
    error, _ = failure("import", "ravenea", run, tmp_path / "absent.json")
    assert isinstance(error, UsageError) and "does not exist" in str(error)
    other = tmp_path / "labels.xlsx"
    other.write_bytes(b"PK")
    error, _ = failure("import", "ravenea", run, other)
    assert isinstance(error, UsageError) and ".xlsx" in str(error)
