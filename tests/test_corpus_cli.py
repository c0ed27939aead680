"""``m4build corpus`` end to end: the embedded sample, a live-protocol run against a real
loopback MediaWiki server with faults, a SIGKILL in the middle of a run, and bad input.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from servers.mediawiki import Fault, MediaWikiServer, WikiPage

from m4build.languages import load_languages
from m4build.pipelines.m4rag.queries import FormQueries, unique_keys
from m4build.sources.benchmarks import load_items

pytestmark = pytest.mark.slow

LANGS = "en,ja_formal,fr,zh_cn"


def m4build(*args: str, env: dict | None = None, check: bool = False) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    full_env.pop("M4BUILD_CONTACT", None)
    result = subprocess.run(
        [sys.executable, "-m", "m4build", *args], capture_output=True, text=True, env=full_env, timeout=240
    )
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def corpus_rows(run: Path) -> list[dict]:
    """Every published record without its retrieval time, which is the one field meant to differ."""
    rows = []
    for path in sorted((run / "data" / "corpus").glob("*/*.parquet")):
        rows.extend(pq.read_table(path).drop(["retrieved_at"]).to_pylist())
    return sorted(rows, key=lambda row: row["id"])


# -- the embedded sample -------------------------------------------------------------------------


def test_worldcuisines_all_languages_from_the_sample_loads_with_load_dataset(tmp_path):
    run = tmp_path / "wc"
    result = m4build("corpus", "worldcuisines", "--lang", "all", "--source", "sample", "--out", str(run), check=True)
    assert "Corpus finished" in result.stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["counts"]["items"] == 120 and manifest["counts"]["languages"] == 30
    assert manifest["failures"]["search"] == manifest["failures"]["fetch"] == 0
    corpus = datasets.load_dataset(str(run), "default", split="train")
    assert corpus.num_rows == manifest["counts"]["sections"] > 0
    english = datasets.load_dataset(str(run), "en", split="train")
    assert set(english["wiki"]) == {"enwiki"}
    assert len(set(corpus["id"])) == corpus.num_rows
    record = english[0]
    assert record["id"] == f"enwiki:{record['page_id']}:{record['revision_id']}:{record['section_index']}"
    assert record["retrieved_by"] and record["url"].startswith("https://en.wikipedia.org/wiki/")
    queries = datasets.load_dataset(str(run), "queries", split="train")
    assert set(queries["query_type"]) == {"question", "answer", "culture"}

    again = m4build("corpus", "worldcuisines", "--lang", "all", "--source", "sample", "--out", str(run), check=True)
    assert "resumed and finished" in again.stdout
    rerun = json.loads((run / "manifest.json").read_text())
    assert rerun["counts"] == manifest["counts"]
    assert rerun["cache_hits"]["queries_from_earlier_attempts"] == manifest["counts"]["unique_queries"]


def test_cvqa_all_languages_from_the_sample(tmp_path):
    run = tmp_path / "cvqa"
    m4build("corpus", "cvqa", "--lang", "all", "--source", "sample", "--out", str(run), check=True)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["counts"]["items"] == 20
    assert datasets.load_dataset(str(run), "default", split="train").num_rows == manifest["counts"]["sections"]


# -- a live-protocol run against the loopback server ---------------------------------------------


def pages_for_sample_queries(langs: str, per_query: int = 3) -> list[WikiPage]:
    """Articles that answer the sample's queries, so that every search has hits to fetch."""
    languages = load_languages().resolve("worldcuisines", langs)
    items = load_items("worldcuisines", [lang.code for lang in languages], source="sample")
    former = FormQueries({lang.code: lang.dbname for lang in languages})
    pages, next_id = [], {}
    for wiki, text in unique_keys(query.key for query in former.run(items)):
        for j in range(per_query):
            page_id = next_id[wiki] = next_id.get(wiki, 0) + 1
            html = (
                f'<div class="mw-parser-output"><p>{text} — article {j}.</p>'
                f'<div class="mw-heading mw-heading2"><h2 id="History">History</h2></div>'
                f"<p>History of {text} number {j} on {wiki}.</p></div>"
            )
            pages.append(WikiPage(wiki, page_id, 1000 + page_id, f"{text} {j}", html, wikidata_id=f"Q{page_id}"))
    return pages


def api_args(server: MediaWikiServer, run: Path, recipe: Path | None = None) -> list[str]:
    args = ["corpus", "worldcuisines", "--lang", LANGS, "--source", "api", "--items", "sample",
            "--endpoint", server.url_template, "--contact", "m4build-tests@example.org", "--out", str(run)]
    return args + (["--recipe", str(recipe)] if recipe else [])


def small_unit_recipe(tmp_path: Path) -> Path:
    from m4build.recipes import load_recipe

    recipe = load_recipe("m4rag")
    recipe.update(search_unit_size=4, fetch_unit_size=4, max_retries=3)
    path = tmp_path / "recipe.yaml"
    path.write_text(json.dumps(recipe))  # JSON is YAML
    return path


def test_api_run_survives_faults_and_matches_a_clean_run(tmp_path):
    pages = pages_for_sample_queries(LANGS)
    recipe = small_unit_recipe(tmp_path)
    with MediaWikiServer(pages) as clean_server:
        m4build(*api_args(clean_server, tmp_path / "clean", recipe), check=True)
    with MediaWikiServer(pages) as server:
        server.add_faults(Fault.http(429, retry_after="1"), Fault.http(503), kind="search")
        server.add_faults(Fault.maxlag(retry_after="1"), Fault.malformed(), Fault.truncated(), kind="parse")
        m4build(*api_args(server, tmp_path / "faulty", recipe), check=True)
        assert server.pending_faults() == 0
        user_agents = {entry.headers.get("user-agent") for entry in server.stats.log}
        maxlags = {entry.params.get("maxlag") for entry in server.stats.log}
    assert corpus_rows(tmp_path / "faulty") == corpus_rows(tmp_path / "clean")
    assert all("m4build-tests@example.org" in agent for agent in user_agents)
    assert maxlags == {"5"}
    manifest = json.loads((tmp_path / "faulty" / "manifest.json").read_text())
    unique = manifest["counts"]["unique_articles"]
    assert manifest["requests"]["requests.parse"] == unique + 3  # one per article, plus the three retried
    assert manifest["source"]["user_agent"].startswith("m4build/")


def test_a_page_that_keeps_failing_is_reported_then_fetched_on_the_next_run(tmp_path):
    pages = pages_for_sample_queries("en")
    recipe = small_unit_recipe(tmp_path)
    run = tmp_path / "run"
    args = lambda server: ["corpus", "worldcuisines", "--lang", "en", "--source", "api", "--items", "sample",  # noqa: E731
                           "--endpoint", server.url_template, "--contact", "t@example.org", "--out", str(run),
                           "--recipe", str(recipe)]
    with MediaWikiServer(pages) as server:
        server.add_faults(*[Fault.http(500)] * 4, kind="parse", pageid=pages[0].pageid, wiki="enwiki")
        first = m4build(*args(server))
    assert first.returncode == 1
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["failures"]["fetch"] == 1
    assert manifest["failures"]["examples"][0]["reason"] == "http-500"
    assert json.loads((run / "failures.jsonl").read_text().splitlines()[0])["page_id"] == pages[0].pageid
    with MediaWikiServer(pages) as server:
        m4build(*args(server), check=True)
        assert server.stats.count(kind="parse") == 1  # only the failed page is fetched again
        assert server.stats.count(kind="search") == 0
    assert json.loads((run / "manifest.json").read_text())["failures"]["fetch"] == 0


def test_sigkill_mid_run_then_rerun_gives_the_same_corpus(tmp_path):
    pages = pages_for_sample_queries(LANGS)
    recipe = small_unit_recipe(tmp_path)
    with MediaWikiServer(pages) as server:
        m4build(*api_args(server, tmp_path / "whole", recipe), check=True)
        requests_whole = server.stats.count()

    run = tmp_path / "killed"
    with MediaWikiServer(pages, delay=0.15) as server:
        env = {**os.environ, "COLUMNS": "200"}
        process = subprocess.Popen([sys.executable, "-m", "m4build", *api_args(server, run, recipe)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list((run / "state" / "fetch").glob("*.parquet"))) < 2:
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert not (run / "manifest.json").exists(), "the run finished before it could be killed"
        finished_units = len(list((run / "state" / "fetch").glob("*.parquet")))
        assert finished_units >= 2
        requests_before = server.stats.count()

    with MediaWikiServer(pages) as server:
        m4build(*api_args(server, run, recipe), check=True)
        requests_after = server.stats.count()

    assert corpus_rows(run) == corpus_rows(tmp_path / "whole")
    ids = [row["id"] for row in corpus_rows(run)]
    assert len(ids) == len(set(ids))
    # Finished units were not fetched again: the resumed run needed fewer requests than a whole one.
    assert requests_after < requests_whole
    assert requests_before + requests_after >= requests_whole


# -- bad input -------------------------------------------------------------------------------------


def test_unknown_benchmark_is_refused_with_the_choices(tmp_path):
    result = m4build("corpus", "vqav2", "--source", "sample", "--out", str(tmp_path / "x"))
    assert result.returncode == 2
    assert "unknown benchmark 'vqav2'" in result.stderr and "worldcuisines, cvqa" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_language_is_refused_with_the_valid_codes(tmp_path):
    result = m4build("corpus", "worldcuisines", "--lang", "en,klingon", "--source", "sample", "--out", str(tmp_path / "x"))
    assert result.returncode == 2
    assert "klingon" in result.stderr and "jv_krama" in result.stderr
    assert not (tmp_path / "x").exists()


def test_live_run_without_contact_is_refused_with_how_to_set_it(tmp_path):
    result = m4build("corpus", "worldcuisines", "--lang", "en", "--items", "sample", "--out", str(tmp_path / "x"))
    assert result.returncode == 4
    assert "M4BUILD_CONTACT" in result.stderr and "--contact" in result.stderr


def test_malformed_dump_names_the_file_and_line(tmp_path):
    dump = tmp_path / "enwiki.ndjson"
    good = {"name": "A", "identifier": 1, "version": {"identifier": 2}, "url": "https://en.wikipedia.org/wiki/A",
            "is_part_of": {"identifier": "enwiki"}, "namespace": {"identifier": 0},
            "article_body": {"html": "<p>A</p>"}}
    dump.write_text(json.dumps(good) + "\n" + '{"name": "B", "identifier": \n')
    result = m4build("corpus", "worldcuisines", "--lang", "en", "--source", "dump", str(dump),
                     "--items", "sample", "--out", str(tmp_path / "x"))
    assert result.returncode == 3
    assert "enwiki.ndjson" in result.stderr and "line 2" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_changed_setting_does_not_mix_into_an_existing_run(tmp_path):
    run = tmp_path / "wc"
    m4build("corpus", "worldcuisines", "--lang", "en", "--source", "sample", "--out", str(run), check=True)
    before = corpus_rows(run)
    result = m4build("corpus", "worldcuisines", "--lang", "en", "--k", "5", "--source", "sample", "--out", str(run))
    assert result.returncode == 2 and "differs in: k" in result.stderr
    assert corpus_rows(run) == before


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path):
    result = m4build("corpus", "worldcuisines", "--lang", "ja", "--source", "sample", "--out", str(tmp_path / "x"),
                     "--dry-run", check=True)
    assert "jawiki" in result.stdout and "enwiki" in result.stdout
    assert not (tmp_path / "x").exists()


def test_dump_source_builds_from_enterprise_records_with_no_request(tmp_path, fixtures_dir):
    dump = fixtures_dir / "wikipedia" / "enterprise" / "mul--squirrel--enterprise.ndjson.gz"
    items = tmp_path / "cvqa.jsonl"
    row = {"image": None, "ID": "test_ru_0", "Subset": "('Russian', 'Russia')",
           "Question": "Какое животное на фото?", "Translated Question": "Which animal is in the photo?",
           "Options": ["Белка", "Заяц", "Ёж", "Лиса"], "Translated Options": ["Squirrel", "Hare", "Hedgehog", "Fox"],
           "Label": 0, "Category": "Animals", "Image Type": "Self", "Image Source": "test", "License": "CC0"}
    items.write_text(json.dumps(row, ensure_ascii=False) + "\n")
    run = tmp_path / "run"
    m4build("corpus", "cvqa", "--lang", "ru", "--source", "dump", str(dump), "--items", str(items),
            "--out", str(run), check=True)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["source"]["kind"] == "dump" and manifest["source"]["paths"] == [str(dump.resolve())]
    assert not any(key.startswith("requests.") for key in manifest["requests"])
    english = datasets.load_dataset(str(run), "en", split="train")
    russian = datasets.load_dataset(str(run), "ru", split="train")
    assert set(english["title"]) == {"Squirrel"} and set(russian["wiki"]) == {"ruwiki"}
    assert english[0]["wikidata_id"] == "Q9482" and english[0]["source"] == "snapshot"
    lead = english.filter(lambda r: r["section_kind"] == "lead")[0]
    kinds = {(entry["query_type"], entry["query_lang"]) for entry in lead["retrieved_by"]}
    assert ("answer", "en") in kinds and ("answer", "ru_ru") not in kinds  # ruwiki has its own record


def test_flag_mistakes_get_clicks_message_and_exit_2_without_a_traceback(tmp_path):
    for args in (["corpus", "worldcuisines", "--k", "0"], ["search"], ["corpus", "cvqa", "--no-such-flag"]):
        result = m4build(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr
    assert "Invalid value for '--k'" in m4build("corpus", "worldcuisines", "--k", "0").stderr
