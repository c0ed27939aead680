"""``m4build eval score``: WorldCuisines, CVQA and RAVENEA predictions made elsewhere, scored from files.

The commands run through a tiny Typer app that mounts ``score_app`` the way ``m4build eval`` does.
Bad input must surface as an ``M4BuildError`` (the CLI's ``main`` turns it into one message and the
error's exit code): the tests check the exception's type, exit code and message.

Fixtures: ``tests/fixtures/worldcuisines_vqa/vqa_rows.jsonl`` (real WorldCuisines VQA rows) and
``tests/fixtures/eval_score/`` (see its ATTRIBUTION.md: the predictions, CVQA-layout rows and RAVENEA
judgments are written by us; three WorldCuisines prediction lines are real).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from m4build.cli.eval_score import score_app
from m4build.errors import ExitCode, InputFileError, M4BuildError, RemoteError, UsageError
from m4build.eval.scoring import inputs as scoring_inputs
from m4build.eval.scoring.cvqa import m4rag_answer, split_id
from m4build.eval.scoring.worldcuisines import PredictionFileName, parse_file_name
from m4build.metrics import MetricInputError

FIXTURES = Path(__file__).parent / "fixtures"
SCORE = FIXTURES / "eval_score"
VQA_ROWS = FIXTURES / "worldcuisines_vqa" / "vqa_rows.jsonl"
WC_TASK1 = SCORE / "worldcuisines" / "task1_mc_tiny-vlm_pred_small.jsonl"
WC_TASK2 = SCORE / "worldcuisines" / "task2_mc_tiny-vlm_pred_small.jsonl"
WC_REAL = SCORE / "worldcuisines" / "real" / "task1_mc_gpt-4o-mini-2024-07-18_pred_small.jsonl"
CVQA_ROWS = SCORE / "cvqa" / "cvqa_rows.jsonl"
CVQA_RESPONSES = SCORE / "cvqa" / "responses.jsonl"
RAVENEA = SCORE / "ravenea"

app = typer.Typer(pretty_exceptions_enable=False)
app.add_typer(score_app, name="score")


@app.callback()
def root() -> None:
    """The stand-in for ``m4build eval``."""


def score(*args: str | Path) -> tuple[dict, str]:
    """Run a score command that must succeed; return its JSON report and what it printed."""
    result = CliRunner().invoke(app, ["score", *map(str, args)], env={"COLUMNS": "200"})
    if result.exit_code != 0:
        raise AssertionError(f"exit {result.exit_code}: {result.exception!r}\n{result.output}")
    out = Path(args[list(args).index("--json") + 1])
    return json.loads(out.read_text(encoding="utf-8")), result.output


def failure(*args: str | Path) -> M4BuildError:
    """Run a score command that must fail with an M4BuildError (what main() maps to an exit code)."""
    result = CliRunner().invoke(app, ["score", *map(str, args)], env={"COLUMNS": "200"})
    assert result.exit_code != 0
    assert isinstance(result.exception, M4BuildError), f"{result.exception!r}\n{result.output}"
    return result.exception


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# --- WorldCuisines -------------------------------------------------------------------------------

# Six predictions over prompt types 1 and 3 in en and ar (qa_id: gold option):
#   type 1, en: 0 "2" (right), 151 "1" (gold 3, wrong)            -> 1/2
#   type 1, ar: 0 "2. محشي باذنجان" (leading "2.", right)           -> 1/1
#   type 3, en: 137 "Pistolet" (option 2's text, gold 2)           -> default 1/1; parity 0/1 (the
#               reference reads option text as the string "2", never equal to the number 2)
#   type 3, ar: 137 "I am not sure." (unparsable), 225 "5" (right) -> 1/2
# default: type 1 = (0.5 + 1)/2 = 0.75, type 3 = (1 + 0.5)/2 = 0.75, macro = 0.75; micro = 4/6
# parity:  type 1 = (50 + 100)/2 = 75, type 3 = (0 + 50)/2 = 25, macro = 50 -> 0.5; micro = 3/6


def test_worldcuisines_hand_worked_default(tmp_path):
    report, printed = score(
        "worldcuisines", "--predictions", WC_TASK1, "--vqa", VQA_ROWS, "--json", tmp_path / "wc.json"
    )
    assert report["benchmark"] == "worldcuisines" and report["mode"] == "default"
    assert report["macro"] == pytest.approx(0.75)
    assert report["micro"] == pytest.approx(4 / 6)
    assert (report["n"], report["correct"], report["unparsable"]) == (6, 4, 1)
    assert report["macro_by_prompt_type"] == pytest.approx({"1": 0.75, "3": 0.75})
    table = report["by_prompt_type_and_language"]
    assert {lang: group["accuracy"] for lang, group in table["1"].items()} == {"ar": 1.0, "en": 0.5}
    assert {lang: group["accuracy"] for lang, group in table["3"].items()} == {"ar": 0.5, "en": 1.0}
    assert report["prompt_type_names"] == {
        "1": "1a. Dish Name (No-Context)",
        "3": "1b. Dish Name (Contextualized)",
    }
    assert report["model"] == "tiny-vlm"
    assert report["inputs"] == {"predictions": [str(WC_TASK1)], "vqa": [str(VQA_ROWS)]}
    assert report["rules"]["option_text"] == 1
    assert (
        "1a. Dish Name (No-Context)" in printed and "macro 75.00  micro 66.67  n 6  unparsable 1" in printed
    )


def test_worldcuisines_hand_worked_parity(tmp_path):
    report, printed = score(
        "worldcuisines", "-p", WC_TASK1, "--vqa", VQA_ROWS, "--json", tmp_path / "wc.json", "--mode", "parity"
    )
    assert report["mode"] == "parity"
    assert report["macro"] == pytest.approx(0.5)
    assert report["micro"] == pytest.approx(0.5)
    assert report["macro_by_prompt_type"] == pytest.approx({"1": 0.75, "3": 0.25})
    assert report["by_prompt_type_and_language"]["3"]["en"]["accuracy"] == 0.0
    assert report["unparsable"] == 1
    assert "macro 50.00  micro 50.00" in printed


def test_worldcuisines_two_files_add_a_prompt_type(tmp_path):
    # task2 adds 300/en "Hungary" (option 2's text, gold 2): type 2 = 1.0 (default), 0 (parity).
    # default macro = (0.75 + 0.75 + 1)/3 = 0.8333; parity = round((75 + 25 + 0)/3, 2) = 33.33 -> 0.3333
    args = ("worldcuisines", "-p", WC_TASK1, "-p", WC_TASK2, "--vqa", VQA_ROWS)
    default, printed = score(*args, "--json", tmp_path / "d.json")
    parity, _ = score(*args, "--json", tmp_path / "p.json", "--mode", "parity")
    assert default["macro"] == pytest.approx(2.5 / 3)
    assert parity["macro"] == pytest.approx(0.3333)
    assert default["n"] == 7 and default["macro_by_prompt_type"]["2"] == 1.0
    # Columns follow the paper's order 1a, 1b, 2 (types 1, 3, 2).
    assert printed.index("1a. Dish") < printed.index("1b. Dish") < printed.index("2. Regional")


def test_worldcuisines_folder_and_parquet_vqa_rows(tmp_path):
    folder = tmp_path / "result"
    folder.mkdir()
    (folder / WC_TASK1.name).write_bytes(WC_TASK1.read_bytes())
    rows = [json.loads(line) for line in VQA_ROWS.read_text(encoding="utf-8").splitlines()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "vqa.parquet")
    report, _ = score(
        "worldcuisines", "-p", folder, "--vqa", tmp_path / "vqa.parquet", "--json", tmp_path / "o.json"
    )
    assert report["macro"] == pytest.approx(0.75) and report["n"] == 6


def test_worldcuisines_hub_dataset_in_the_question_layout(tmp_path, monkeypatch):
    # vqa-v1.1 rows as M4-RAG reads them: the question with its options, an options list, 0-based index.
    rows = []
    for line in VQA_ROWS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        options = [
            part.split(". ", 1)[1] for part in row["multi_choice_prompt"].splitlines() if part[:1].isdigit()
        ]
        rows.append(
            {
                "qa_id": row["qa_id"],
                "lang": row["lang"],
                "prompt_type": int(row["prompt_type"]),
                "question": row["multi_choice_prompt"],
                "options": options,
                "mcq_answer_index": row["multi_choice_answer"] - 1,
                "image": None,
            }
        )
    tasks = {
        row["qa_id"]: json.loads(line)["task"] for row, line in zip(rows, VQA_ROWS.open(encoding="utf-8"))
    }
    requests = []

    def fake_load(name, config, split):
        requests.append((name, config, split))
        wanted = "small_task2" if config == "task2" else "small_task1"
        return datasets.Dataset.from_list([row for row in rows if tasks[row["qa_id"]] == wanted])

    monkeypatch.setattr(scoring_inputs, "load_hub_dataset", fake_load)
    hub = "worldcuisines/vqa-v1.1"
    report, _ = score(
        "worldcuisines", "-p", WC_TASK1, "-p", WC_TASK2, "--vqa", hub, "--json", tmp_path / "h.json"
    )
    # The *_pred_small file names choose the small test split; both configs are loaded.
    assert requests == [
        ("worldcuisines/vqa-v1.1", "task1", "test_small"),
        ("worldcuisines/vqa-v1.1", "task2", "test_small"),
    ]
    assert report["macro"] == pytest.approx(2.5 / 3)
    assert report["inputs"]["vqa_split"] == "test_small"


def test_worldcuisines_hub_failure_names_the_flag(tmp_path, monkeypatch):
    def unreachable(name, config, split):
        raise RemoteError(f"could not load {name} from the Hugging Face Hub", "(the loader's own hint)")

    monkeypatch.setattr(scoring_inputs, "load_hub_dataset", unreachable)
    error = failure(
        "worldcuisines", "-p", WC_TASK1, "--vqa", "worldcuisines/vqa-v1.1", "--json", tmp_path / "o.json"
    )
    assert isinstance(error, RemoteError) and "--vqa" in error.hint


def test_file_names_say_task_kind_model_and_size():
    assert parse_file_name(WC_REAL) == PredictionFileName("task1", "mc", "gpt-4o-mini-2024-07-18", "small")
    assert parse_file_name(Path("task2_oe_old_pangea-7b_pred_small.jsonl")) == PredictionFileName(
        "task2", "oe", "old_pangea-7b", "small"
    )
    assert parse_file_name(Path("task1_mc_molmo-7b-d_pred.jsonl")) == PredictionFileName(
        "task1", "mc", "molmo-7b-d", None
    )
    assert parse_file_name(Path("predictions.jsonl")) is None


def test_real_predictions_against_other_vqa_rows_are_refused(tmp_path):
    # The repository's small-set predictions use qa_ids (407, ...) that the hf_prompt rows do not have.
    error = failure("worldcuisines", "-p", WC_REAL, "--vqa", VQA_ROWS, "--json", tmp_path / "o.json")
    assert isinstance(error, MetricInputError) and error.exit_code == ExitCode.INPUT
    assert "3 predictions whose (qa_id, lang) is not in the VQA rows" in error.message
    assert f"{WC_REAL}:1 (qa_id '407', lang 'ar')" in error.message
    assert "--vqa-split" in error.hint
    assert not (tmp_path / "o.json").exists()


def test_duplicate_predictions_name_both_lines(tmp_path):
    path = write_lines(
        tmp_path / "task1_mc_m_pred.jsonl",
        '{"qa_id": "0", "prediction": "2", "lang": "en", "multi_choice_answer": 2}',
        '{"qa_id": "0", "prediction": "1", "lang": "en", "multi_choice_answer": 2}',
    )
    error = failure("worldcuisines", "-p", path, "--vqa", VQA_ROWS, "--json", tmp_path / "o.json")
    assert isinstance(error, MetricInputError)
    assert f"qa_id '0', lang 'en' at {path}:1 and {path}:2" in error.message


def test_missing_column_and_malformed_line_name_the_file_and_line(tmp_path):
    no_gold = write_lines(tmp_path / "a.jsonl", '{"qa_id": "0", "prediction": "2", "lang": "en"}')
    error = failure("worldcuisines", "-p", no_gold, "--vqa", VQA_ROWS, "--json", tmp_path / "o.json")
    assert isinstance(error, InputFileError) and error.exit_code == ExitCode.INPUT
    assert f"{no_gold}:1 lacks column(s) 'multi_choice_answer'" in error.message
    broken = write_lines(
        tmp_path / "b.jsonl",
        '{"qa_id": "0", "prediction": "2", "lang": "en", "multi_choice_answer": 2}',
        '{"qa_id": "151", "prediction": "3", "lang": "en"',
    )
    error = failure("worldcuisines", "-p", broken, "--vqa", VQA_ROWS, "--json", tmp_path / "o.json")
    assert isinstance(error, InputFileError) and f"{broken}:2: not valid JSON" in error.message


def test_bad_values_and_disagreeing_gold_answers(tmp_path):
    path = write_lines(
        tmp_path / "c.jsonl",
        '{"qa_id": "0", "prediction": null, "lang": "en", "multi_choice_answer": 2}',
        '{"qa_id": "151", "prediction": "3", "lang": "en", "multi_choice_answer": "three"}',
    )
    error = failure("worldcuisines", "-p", path, "--vqa", VQA_ROWS, "--json", tmp_path / "o.json")
    assert isinstance(error, MetricInputError)
    assert f"prediction is missing or not text (e.g. {path}:1)" in error.message
    assert f"not a whole number (e.g. {path}:2)" in error.message
    wrong_gold = write_lines(
        tmp_path / "d.jsonl", '{"qa_id": "0", "prediction": "2", "lang": "en", "multi_choice_answer": 3}'
    )
    error = failure("worldcuisines", "-p", wrong_gold, "--vqa", VQA_ROWS, "--json", tmp_path / "o.json")
    assert "multi_choice_answer differs from the VQA row's" in error.message and "3 vs 2" in error.message


def test_usage_errors(tmp_path):
    out = tmp_path / "o.json"
    error = failure("worldcuisines", "-p", WC_TASK1, "--vqa", VQA_ROWS, "--json", out, "--mode", "strict")
    assert isinstance(error, UsageError) and error.exit_code == ExitCode.USAGE and "'strict'" in error.message
    open_ended = write_lines(
        tmp_path / "task1_oe_m_pred.jsonl", '{"qa_id": "0", "prediction": "x", "lang": "en", "answer": "y"}'
    )
    error = failure("worldcuisines", "-p", open_ended, "--vqa", VQA_ROWS, "--json", out)
    assert isinstance(error, UsageError) and "Open-ended" in error.message
    unnamed = write_lines(
        tmp_path / "preds.jsonl", '{"qa_id": "0", "prediction": "x", "lang": "en", "answer": "y"}'
    )
    error = failure("worldcuisines", "-p", unnamed, "--vqa", VQA_ROWS, "--json", out)
    assert isinstance(error, UsageError) and f"{unnamed}:1 is an open-ended prediction" in error.message
    error = failure("worldcuisines", "-p", WC_TASK1, "-p", WC_REAL, "--vqa", VQA_ROWS, "--json", out)
    assert isinstance(error, UsageError) and "different models" in error.message
    error = failure("worldcuisines", "-p", tmp_path / "missing.jsonl", "--vqa", VQA_ROWS, "--json", out)
    assert isinstance(error, UsageError) and "No such prediction file" in error.message
    error = failure("worldcuisines", "-p", WC_TASK1, "-p", WC_TASK1, "--vqa", VQA_ROWS, "--json", out)
    assert isinstance(error, UsageError) and "more than once" in error.message
    assert not out.exists()


def test_help_lists_the_three_commands():
    result = CliRunner().invoke(app, ["score", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert all(name in result.output for name in ("worldcuisines", "cvqa", "ravenea"))


# --- CVQA ----------------------------------------------------------------------------------------

# Rows (gold = Label + 1): es_mx_01 -> 2, es_mx_02 -> 1, ur_pk_01 -> 2, ur_pk_02 -> 2 (no prediction).
#   es_mx_01-en    {"answer": 2}      default right   parity "2" right
#   es_mx_01-local {"answer": "2"}    default right   parity "2" right
#   es_mx_02-en    Day of the Dead    default right (option 1's English text)   parity unreadable
#   es_mx_02-local {"answer": 1.0}    default right   parity "1.0" != "1", wrong (unreadable)
#   ur_pk_01-en    {"answer": 3}      wrong in both
#   ur_pk_01-local answer: 2          default right (first integer)   parity right (answer: N)
# default (predictions only): en: Spanish-Mexico 2/2, Urdu-Pakistan 0/1 -> 0.5;
#   local: 2/2 and 1/1 -> 1.0; macro = 0.75; micro = 5/6; missing = 2 (ur_pk_02 in both languages)
# parity (every row in both languages, missing = wrong): en: 1/2, 0/2 -> 0.25; local: 1/2, 1/2 -> 0.5;
#   macro = 0.375; micro = 3/8; unreadable = 2 + 2 missing = 4


def test_cvqa_hand_worked_default(tmp_path):
    report, printed = score("cvqa", "-p", CVQA_RESPONSES, "--cvqa", CVQA_ROWS, "--json", tmp_path / "c.json")
    assert report["macro"] == pytest.approx(0.75) and report["micro"] == pytest.approx(5 / 6)
    assert report["macro_by_prompt_type"] == pytest.approx({"en": 0.5, "local": 1.0})
    assert set(report["by_language"]) == {"Spanish-Mexico", "Urdu-Pakistan"}
    assert (report["n"], report["unparsable"], report["missing"]) == (6, 0, 2)
    assert report["missing_scored_as_wrong"] is False
    assert "English prompt" in printed and "subset" in printed
    assert "2 CVQA question(s) have no prediction: not scored." in printed


def test_cvqa_hand_worked_parity(tmp_path):
    report, _ = score(
        "cvqa", "-p", CVQA_RESPONSES, "--cvqa", CVQA_ROWS, "--json", tmp_path / "c.json", "--mode", "parity"
    )
    assert report["mode"] == "parity"
    assert report["macro"] == pytest.approx(0.375) and report["micro"] == pytest.approx(3 / 8)
    assert report["macro_by_prompt_type"] == pytest.approx({"en": 0.25, "local": 0.5})
    assert (report["n"], report["unparsable"], report["missing"]) == (8, 4, 2)
    # By category: food = es_mx_01 (2 right) + ur_pk_02 (2 missing) = 2/4; landmarks = ur_pk_01 1/2.
    assert report["by_category"]["Cooking and food"] == {"n": 4, "correct": 2, "accuracy": 0.5}
    assert report["by_category"]["Geography / buildings / landmarks"]["accuracy"] == 0.5
    assert report["by_category"]["Tradition / art / history"]["accuracy"] == 0.0


def test_m4rag_answer_reading():
    assert m4rag_answer('{"answer": 2}') == "2"
    assert m4rag_answer('{"answer": "2. Tacos al pastor"}') == "2. Tacos al pastor"
    assert m4rag_answer('{"explanation": "..."}') == "None"
    assert m4rag_answer("2") is None  # valid JSON, not an object: M4-RAG's .get fails
    assert m4rag_answer('The "answer": "007"') == "7"
    assert m4rag_answer("answer: " + "9" * 5000).startswith("9")  # int() would refuse 5000 digits
    assert m4rag_answer("Tacos") is None
    assert split_id("123_0-en") == ("123_0", "en") and split_id("123_0-local") == ("123_0", "local")
    assert split_id("123_0") == ("123_0", "unmarked")


def test_cvqa_json_array_and_unmarked_ids(tmp_path):
    path = tmp_path / "responses.json"
    path.write_text(json.dumps([{"ID": "m4build_es_mx_01_0", "prediction": "2"}]), encoding="utf-8")
    report, _ = score("cvqa", "-p", path, "--cvqa", CVQA_ROWS, "--json", tmp_path / "c.json")
    assert report["by_prompt_type"] == {"unmarked": {"n": 1, "correct": 1, "unparsable": 0, "accuracy": 1.0}}
    error = failure(
        "cvqa", "-p", path, "--cvqa", CVQA_ROWS, "--json", tmp_path / "c.json", "--mode", "parity"
    )
    assert isinstance(error, MetricInputError) and "IDs without -en or -local" in error.message


def test_cvqa_bad_input(tmp_path):
    out = tmp_path / "c.json"
    unknown = write_lines(
        tmp_path / "u.jsonl", '{"ID": "5919991144272485961_0-en", "response": "{\\"answer\\": 1}"}'
    )
    error = failure("cvqa", "-p", unknown, "--cvqa", CVQA_ROWS, "--json", out)
    assert isinstance(error, MetricInputError) and "ID is not in the CVQA rows" in error.message
    assert f"{unknown}:1" in error.message
    twice = write_lines(
        tmp_path / "t.jsonl",
        '{"ID": "m4build_es_mx_01_0-en", "response": "2"}',
        '{"ID": "m4build_es_mx_01_0-en", "response": "3"}',
    )
    error = failure("cvqa", "-p", twice, "--cvqa", CVQA_ROWS, "--json", out)
    assert isinstance(error, MetricInputError) and f"at {twice}:1 and {twice}:2" in error.message
    no_text = write_lines(tmp_path / "n.jsonl", '{"ID": "m4build_es_mx_01_0-en"}')
    error = failure("cvqa", "-p", no_text, "--cvqa", CVQA_ROWS, "--json", out)
    assert isinstance(error, InputFileError) and "lacks column(s) 'response'" in error.message
    hidden_row = json.loads(CVQA_ROWS.read_text(encoding="utf-8").splitlines()[0]) | {"Label": -1}
    hidden = write_lines(tmp_path / "hidden.jsonl", json.dumps(hidden_row))
    error = failure("cvqa", "-p", CVQA_RESPONSES, "--cvqa", hidden, "--json", out)
    assert isinstance(error, InputFileError) and "Label is -1" in error.message
    assert "davidanugraha/cvqa" in error.hint
    assert not out.exists()


# --- RAVENEA -------------------------------------------------------------------------------------

# q1 judged 101=3, 102=1, 103=0, 104=−3, 105=2; the run ranks 102, 101, 999 (unjudged), 104.
# q2 judged 201=2, 202=−1; the run ranks 201, 202. Gains 2^(g+3) − 1: 63, 31, 15, 7, 3, 1, 0.
# q1 (as in test_metrics_graded): RR 1/2; P@1 0, P@3 1/3, P@5 1/5 (parity 1/4);
#   nDCG@1 = 15/63; nDCG@3 = (15 + 63/log2 3) / (63 + 31/log2 3 + 15/2) (parity: see there).
# q2: RR 1; P@1 1, P@3 1/3 (parity 1/2), P@5 1/5 (parity 1/2); nDCG@k = 1 in both modes.
Q1_NDCG3 = (15 + 63 / math.log2(3)) / (63 + 31 / math.log2(3) + 15 / 2)
Q1_NDCG3_PARITY = (15 + 63 / math.log2(3) + 7 / 2) / (63 + 15 / math.log2(3) + 7 / 2)


def test_ravenea_both_modes_from_metadata(tmp_path):
    report, printed = score(
        "ravenea", "--run", RAVENEA / "run.trec", "--qrels", RAVENEA / "metadata.jsonl",
        "--mode", "both", "--json", tmp_path / "r.json",
    )  # fmt: skip
    default, parity = report["scores"]["default"], report["scores"]["parity"]
    assert report["modes"] == ["default", "parity"] and report["inputs"]["qrels_format"] == "ravenea-metadata"
    assert default["MRR"] == parity["MRR"] == pytest.approx(0.75)
    assert default["P@1"] == parity["P@1"] == pytest.approx(0.5)
    assert default["P@3"] == pytest.approx(1 / 3) and parity["P@3"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert default["P@5"] == pytest.approx(0.2) and parity["P@5"] == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert default["nDCG@1"] == pytest.approx((15 / 63 + 1) / 2)
    assert default["nDCG@3"] == pytest.approx((Q1_NDCG3 + 1) / 2)
    assert parity["nDCG@3"] == pytest.approx((Q1_NDCG3_PARITY + 1) / 2)
    assert default["queries"] == 2
    assert "RAVENEA retrieval" in printed and "75.00" in printed and "parity" in printed


def test_ravenea_trec_qrels_give_the_same_scores(tmp_path):
    from_metadata, _ = score(
        "ravenea",
        "--run",
        RAVENEA / "run.trec",
        "--qrels",
        RAVENEA / "metadata.jsonl",
        "--json",
        tmp_path / "a.json",
    )
    from_qrels, _ = score(
        "ravenea",
        "--run",
        RAVENEA / "run.trec",
        "--qrels",
        RAVENEA / "qrels.txt",
        "--json",
        tmp_path / "b.json",
    )
    assert from_qrels["inputs"]["qrels_format"] == "trec-qrels"
    assert from_qrels["scores"] == from_metadata["scores"]


def test_ravenea_partial_runs_and_bad_input(tmp_path):
    lines = (RAVENEA / "run.trec").read_text(encoding="utf-8").splitlines()
    partial = write_lines(tmp_path / "q1.trec", *(line for line in lines if line.startswith("q1")))
    qrels = RAVENEA / "metadata.jsonl"
    error = failure("ravenea", "--run", partial, "--qrels", qrels, "--json", tmp_path / "o.json")
    assert isinstance(error, MetricInputError) and "references without a prediction" in error.message
    report, _ = score(
        "ravenea", "--run", partial, "--qrels", qrels, "--run-queries-only", "--json", tmp_path / "o.json"
    )
    assert report["scores"]["default"]["queries"] == 1 and report["scores"]["default"]["MRR"] == 0.5
    error = failure(
        "ravenea", "--run", partial, "--qrels", qrels, "--mode", "best", "--json", tmp_path / "x.json"
    )
    assert isinstance(error, UsageError) and error.exit_code == ExitCode.USAGE
    broken = write_lines(tmp_path / "broken.trec", "q1.jpg Q0 101 1 0.9 bm25", "q2.jpg Q0 201 one 0.5 bm25")
    error = failure("ravenea", "--run", broken, "--qrels", qrels, "--json", tmp_path / "x.json")
    assert isinstance(error, MetricInputError) and "line 2" in error.message and str(broken) in error.message
    error = failure(
        "ravenea", "--run", tmp_path / "none.trec", "--qrels", qrels, "--json", tmp_path / "x.json"
    )
    assert isinstance(error, UsageError) and "--run" in error.hint
