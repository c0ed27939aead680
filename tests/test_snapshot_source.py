"""The snapshot and sample sources: every input form, BM25 search, fetch, the index cache, bad input.

Enterprise inputs are made by the tests from real records (tests/fixtures/wikipedia/enterprise);
the parquet inputs from the embedded sample's real articles.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import bm25s
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from m4build.bm25_writer import Bm25Writer
from m4build.errors import ExitCode, InputFileError, UsageError
from m4build.records import Article, FetchFailure, PageRef
from m4build.resources import data_path
from m4build.sources.wikipedia.base import WikipediaSource
from m4build.sources.wikipedia.sample import SAMPLE_ARTICLES, SampleSource
from m4build.sources.wikipedia.snapshot import ARTICLE_SCHEMA, SnapshotSource

SQUIRREL = (
    Path(__file__).parent / "fixtures" / "wikipedia" / "enterprise" / "mul--squirrel--enterprise.ndjson.gz"
)
WIKIS = ("dewiki", "enwiki", "ruwiki")


@pytest.fixture(scope="module")
def squirrel_lines() -> list[bytes]:
    """The three real Enterprise records (de, en, ru), one NDJSON line each."""
    return gzip.decompress(SQUIRREL.read_bytes()).splitlines(keepends=True)


@pytest.fixture(scope="module")
def records(squirrel_lines) -> dict[str, dict]:
    return {r["is_part_of"]["identifier"]: r for r in map(json.loads, squirrel_lines)}


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Iterator[SampleSource]:
    source = SampleSource(cache_dir=tmp_path_factory.mktemp("sample-cache"))
    yield source
    source.close()


@pytest.fixture(scope="module")
def sample_rows() -> list[dict]:
    return pq.read_table(data_path(*SAMPLE_ARTICLES)).to_pylist()


def write_tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def write_input(tmp_path: Path, kind: str, lines: list[bytes]) -> Path:
    """The same records as a plain, gzipped or tar.gz-packaged (one member per record) dump."""
    data = b"".join(lines)
    if kind == "ndjson":
        path = tmp_path / "articles.ndjson"
        path.write_bytes(data)
        return path
    if kind == "ndjson.gz":
        path = tmp_path / "articles.ndjson.gz"
        path.write_bytes(gzip.compress(data))
        return path
    members = {f"wiki_namespace_0_{i}.ndjson": line for i, line in enumerate(lines)}
    members["README.txt"] = b"not records: skipped"
    return write_tar(tmp_path / "wiki_namespace_0.tar.gz", members)


def write_articles(path: Path, rows: list[dict], schema: pa.Schema = ARTICLE_SCHEMA) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


# --- inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ndjson", "ndjson.gz", "tar.gz"])
def test_enterprise_dumps_in_every_packaging(tmp_path, squirrel_lines, records, kind):
    path = write_input(tmp_path, kind, squirrel_lines)
    with SnapshotSource(path, tmp_path / "cache") as source:
        assert source.wikis == WIKIS
        assert source.stats.as_dict()["records"] == 3
        [hit] = source.search("ruwiki", "интерпретируемый язык программирования", 5)
        ru = records["ruwiki"]
        assert (hit.page_id, hit.revision_id, hit.title, hit.wikidata_id, hit.rank) == (
            1601033, 131059810, "Squirrel", "Q1200182", 1,
        )  # fmt: skip
        assert hit.langlinks == ()
        [article] = source.fetch("ruwiki", [hit.ref])
    assert isinstance(article, Article)
    assert article.html == ru["article_body"]["html"]
    assert (article.url, article.retrieved_at, article.source) == (ru["url"], ru["date_modified"], "snapshot")


def test_a_single_pretty_printed_json_record(tmp_path, records):
    path = tmp_path / "Squirrel.json"
    path.write_text(json.dumps(records["enwiki"], indent=2), encoding="utf-8")
    source = SnapshotSource(path, tmp_path / "cache")
    assert source.wikis == ("enwiki",)
    assert [h.title for h in source.search("enwiki", "Sciuridae rodents", 3)] == ["Squirrel"]


def test_only_main_namespace_records_are_kept(tmp_path, records):
    talk = {**records["enwiki"], "namespace": {"identifier": 1}, "identifier": 1}
    lines = [json.dumps(talk).encode() + b"\n", json.dumps(records["dewiki"]).encode() + b"\n"]
    source = SnapshotSource(write_input(tmp_path, "ndjson", lines), tmp_path / "cache")
    assert source.wikis == ("dewiki",)
    assert source.stats.as_dict()["skipped_non_article"] == 1


def test_the_newest_revision_of_a_page_wins_whatever_the_file_order(tmp_path, records):
    newer = records["enwiki"]
    older = {**newer, "version": {"identifier": 1000}, "article_body": {"html": "<p>old squirrel</p>"}}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "new.json").write_text(json.dumps(newer))
    (tmp_path / "b" / "old.json").write_text(json.dumps(older))
    source = SnapshotSource(tmp_path, tmp_path / "cache")  # a folder is searched for inputs
    assert source.stats.as_dict()["duplicate_pages"] == 1
    [hit] = source.search("enwiki", "squirrel", 5)
    assert hit.revision_id == newer["version"]["identifier"]


def test_a_parquet_of_articles_in_our_schema(tmp_path, sample_rows):
    rows = [{**r, "date_modified": None} for r in sample_rows if r["wiki"] == "zhwiki"]
    path = write_articles(tmp_path / "zh.parquet", rows)
    source = SnapshotSource(path, tmp_path / "cache")
    assert source.wikis == ("zhwiki",)
    [cat] = source.search("zhwiki", "哺乳动物", 1)
    [article] = source.fetch("zhwiki", [cat.ref])
    expected = next(r for r in rows if r["page_id"] == 3182)
    assert (article.title, article.html) == ("猫", expected["html"])
    mtime = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert article.retrieved_at == mtime  # no date_modified: the snapshot's time


HF_SCHEMA = pa.schema(
    [("id", pa.string()), ("url", pa.string()), ("title", pa.string()), ("text", pa.string())]
)
HF_ROWS = [
    {
        "id": "12",
        "url": "https://en.wikipedia.org/wiki/Anarchism",
        "title": "Anarchism",
        "text": "Anarchism is a political philosophy and movement.\n\nEtymology\n\nThe word comes from Greek.",
    },
    {
        "id": "25",
        "url": "https://en.wikipedia.org/wiki/Autism",
        "title": "Autism",
        "text": "Autism is a condition.",
    },
]


def test_a_wikimedia_wikipedia_parquet_takes_its_wiki_from_the_dataset_folder(tmp_path):
    path = write_articles(tmp_path / "20231101.en" / "train-00000-of-00001.parquet", HF_ROWS, HF_SCHEMA)
    source = SnapshotSource(path, tmp_path / "cache")
    assert source.wikis == ("enwiki",)
    [hit] = source.search("enwiki", "political philosophy", 5)
    assert (hit.page_id, hit.revision_id, hit.title) == (12, 0, "Anarchism")  # no revision in that schema
    [article] = source.fetch("enwiki", [hit.ref])
    assert article.html.startswith("<p>Anarchism is a political philosophy and movement.</p><p>Etymology</p>")


def test_a_wikimedia_wikipedia_parquet_needs_a_wiki_when_its_path_does_not_say(tmp_path):
    path = write_articles(tmp_path / "articles.parquet", HF_ROWS, HF_SCHEMA)
    with pytest.raises(InputFileError, match="does not say which wiki"):
        SnapshotSource(path, tmp_path / "cache")
    source = SnapshotSource(path, tmp_path / "cache", wiki="simplewiki")
    assert source.wikis == ("simplewiki",)
    assert source.manifest["wikis"] == {"simplewiki": 2}
    with pytest.raises(UsageError, match="not a Wikipedia database name"):
        SnapshotSource(path, tmp_path / "cache", wiki="Simple English")


# --- search and fetch ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wiki", "query", "title"),
    [
        ("enwiki", "matryoshka", "Matryoshka doll"),
        ("enwiki", "self-adjoint complex square matrix", "Hermitian matrix"),
        ("dewiki", "Matrjoschka", "Matrjoschka"),
        ("dewiki", "Physiker Relativitätstheorie", "Albert Einstein"),
        ("zhwiki", "哺乳动物", "猫"),
        ("zhwiki", "东亚的国家", "中国"),
        ("arwiki", "رياضيات", "رياضيات"),
        ("frwiki", "rougequeue oiseau", "Rougequeue de Hodgson"),
        ("itwiki", "strumento musicale tastiera", "Armonium"),
        ("ptwiki", "país soberano", "Portugal"),
        ("ruwiki", "язык программирования", "Squirrel"),
    ],
)
def test_search_ranks_the_right_article_first(sample, wiki, query, title):
    hits = sample.search(wiki, query, 5)
    assert hits[0].title == title
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_search_returns_nothing_for_an_unknown_wiki_or_unknown_words(sample):
    assert sample.search("xxwiki", "matryoshka", 5) == []
    assert sample.search("enwiki", "zzzzqqq", 5) == []
    assert sample.search("enwiki", "", 5) == []


def test_ties_are_broken_by_page_id_never_by_input_order(tmp_path, sample_rows):
    cat = next(r for r in sample_rows if r["title"] == "Matrjoschka")
    rows = [{**cat, "page_id": page_id} for page_id in (30, 10, 20)]  # three identical articles
    source = SnapshotSource(write_articles(tmp_path / "dewiki.parquet", rows), tmp_path / "cache")
    assert [h.page_id for h in source.search("dewiki", "Matrjoschka", 10)] == [10, 20, 30]
    assert [(h.page_id, h.rank) for h in source.search("dewiki", "Matrjoschka", 2)] == [(10, 1), (20, 2)]


def test_fetch_returns_the_revision_held_and_missing_failures_otherwise(sample, sample_rows):
    doll = next(r for r in sample_rows if r["title"] == "Matryoshka doll")
    wanted = PageRef("enwiki", 331080, 1129844348, "Matryoshka doll")
    results = list(
        sample.fetch(
            "enwiki", [wanted, PageRef("enwiki", 331080, 1, "Matryoshka doll"), PageRef("enwiki", 9, 9, "X")]
        )
    )
    article, old_revision, no_page = results
    assert isinstance(article, Article)
    assert (article.ref, article.html, article.source) == (wanted, doll["html"], "sample")
    assert article.retrieved_at == doll["date_modified"]
    assert isinstance(old_revision, FetchFailure) and old_revision.reason == "missing"
    assert "revision 1129844348" in old_revision.detail
    assert isinstance(no_page, FetchFailure) and no_page.reason == "missing"
    [other_wiki] = sample.fetch("xxwiki", [wanted])
    assert isinstance(other_wiki, FetchFailure) and other_wiki.reason == "missing"


def test_fetch_yields_one_record_per_requested_page_however_many(sample):
    refs = [PageRef("enwiki", 331080, 1129844348, "Matryoshka doll")] * 3
    refs += [PageRef("enwiki", n, 1, "?") for n in range(10_000, 11_200)]
    results = list(sample.fetch("enwiki", refs))
    assert len(results) == len(refs)
    assert [type(r) for r in results[:4]] == [Article, Article, Article, FetchFailure]


def test_the_sample_is_a_wikipedia_source_with_the_embedded_articles(sample):
    assert isinstance(sample, WikipediaSource)
    assert sample.name == "sample"
    assert len(sample.wikis) == 12
    assert sample.search("enwiki", "matryoshka", 1)[0].page_id == 331080
    assert sample.search("dewiki", "Matrjoschka", 1)[0].page_id == 79011
    stats = sample.stats.as_dict()
    assert stats["index_builds"] == 12 and stats["search"] >= 2
    again = SampleSource(cache_dir=sample.cache_path.parent)
    assert again.stats.as_dict() == {"cache_hits": 12}


def test_search_and_fetch_are_safe_from_many_threads(sample):
    queries = [
        ("enwiki", "matryoshka"),
        ("dewiki", "Matrjoschka"),
        ("zhwiki", "哺乳动物"),
        ("frwiki", "Ginnis"),
    ] * 25

    def search_and_fetch(wiki_query):
        wiki, query = wiki_query
        hit = sample.search(wiki, query, 3)[0]
        [article] = sample.fetch(wiki, [hit.ref])
        return hit.page_id, len(article.html)

    serial = [search_and_fetch(q) for q in queries]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(search_and_fetch, queries)) == serial


# --- the index cache ----------------------------------------------------------------------


def test_a_second_open_loads_the_saved_index_without_rebuilding(tmp_path, squirrel_lines, monkeypatch):
    path = write_input(tmp_path, "ndjson", squirrel_lines)
    first = SnapshotSource(path, tmp_path / "cache")
    assert first.stats.as_dict()["index_builds"] == 3
    expected = first.search("enwiki", "squirrel", 3)

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the index was rebuilt")

    monkeypatch.setattr(bm25s.BM25, "index", no_rebuild)
    second = SnapshotSource(path, tmp_path / "cache")
    assert second.stats.as_dict() == {"cache_hits": 3}
    assert second.cache_path == first.cache_path
    assert second.search("enwiki", "squirrel", 3) == expected

    monkeypatch.undo()
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))  # the input changed
    third = SnapshotSource(path, tmp_path / "cache")
    assert third.stats.as_dict()["index_builds"] == 3
    assert third.cache_path != first.cache_path


def index_files(source: SnapshotSource) -> dict[str, bytes]:
    """Every file of a built index and store, by path under the cache folder (the store as rows)."""
    files = {}
    for path in sorted(source.cache_path.rglob("*")):
        if path.suffix == ".sqlite":
            with sqlite3.connect(path) as db:
                rows = db.execute("SELECT * FROM articles ORDER BY page_id").fetchall()
            files[str(path.relative_to(source.cache_path))] = repr(rows).encode()
        elif path.is_file() and path.name != "manifest.json":
            files[str(path.relative_to(source.cache_path))] = path.read_bytes()
    return files


def test_an_interrupted_build_resumes_after_the_records_it_had_read(tmp_path, squirrel_lines):
    path = write_input(tmp_path, "ndjson", squirrel_lines)
    cache = tmp_path / "cache"

    def interrupt(records_read: int) -> None:
        if records_read == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        SnapshotSource(path, cache, progress=interrupt)
    assert sorted(p.suffix for p in cache.iterdir()) == [".lock", ".partial"]  # nothing that loads

    seen: list[int] = []
    resumed = SnapshotSource(path, cache, progress=seen.append)
    assert seen == [3]  # the two records read before Ctrl-C are not processed again
    assert resumed.stats.as_dict()["resumed_after_records"] == 2
    assert resumed.manifest["records"] == 3 and resumed.manifest["resumed_after_records"] == 2
    assert list(cache.iterdir()) == [resumed.cache_path]
    assert resumed.search("dewiki", "Hörnchen", 1)[0].page_id == 4042095

    fresh = SnapshotSource(path, tmp_path / "fresh-cache")
    assert index_files(resumed) == index_files(fresh)  # byte for byte what an uninterrupted build makes


def test_ctrl_c_inside_a_record_is_held_until_it_is_done(tmp_path, squirrel_lines, monkeypatch, request):
    """A real SIGINT, raised while the second record is being indexed: that record still counts."""
    path = write_input(tmp_path, "ndjson", squirrel_lines)
    add, calls = Bm25Writer.add, []

    def add_then_ctrl_c(writer, tokens):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return add(writer, tokens)

    monkeypatch.setattr(Bm25Writer, "add", add_then_ctrl_c)
    # As in a terminal, even where the test runner inherited SIGINT ignored (a background job).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    with pytest.raises(KeyboardInterrupt):
        SnapshotSource(path, tmp_path / "cache")
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back
    resumed = SnapshotSource(path, tmp_path / "cache")
    assert resumed.manifest["resumed_after_records"] == 2
    assert index_files(resumed) == index_files(SnapshotSource(path, tmp_path / "fresh-cache"))


CTRL_C_IN_THE_CLI = textwrap.dedent(
    """
    import os, signal, sys
    from m4build.bm25_writer import Bm25Writer
    from m4build.cli.app import main

    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even in a background job
    add, calls = Bm25Writer.add, []

    def add_then_ctrl_c(writer, tokens):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return add(writer, tokens)

    Bm25Writer.add = add_then_ctrl_c
    sys.argv = ["m4build", *sys.argv[1:]]
    main()
    """
)


def test_ctrl_c_in_m4build_corpus_says_so_and_the_rerun_resumes(tmp_path, squirrel_lines):
    path = write_input(tmp_path, "ndjson", squirrel_lines)
    args = ["corpus", "worldcuisines", "--lang", "en", "--source", "dump", str(path), "--items", "sample"]
    args += ["--out", str(tmp_path / "run")]
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_IN_THE_CLI, *args], timeout=120, capture_output=True, check=False
    )
    assert done.returncode == ExitCode.INTERRUPTED, done.stderr.decode()
    message = "interrupted: finished work is saved; run the same command again to resume."
    assert message in done.stderr.decode()
    [partial] = (tmp_path / "run" / "cache").glob("*.partial")
    assert json.loads((partial / "progress.json").read_text())["counts"]["records"] == 2

    command = [sys.executable, "-m", "m4build", *args]
    rerun = subprocess.run(command, timeout=120, capture_output=True, check=False)
    assert rerun.returncode == 0, rerun.stderr.decode()
    [manifest] = (tmp_path / "run" / "cache").glob("*/manifest.json")
    assert json.loads(manifest.read_text())["resumed_after_records"] == 2


KILL_AT_SECOND_CHECKPOINT = textwrap.dedent(
    """
    import os, signal, sys
    from m4build.sources.wikipedia import snapshot_build
    from m4build.sources.wikipedia.snapshot import SnapshotSource

    # A checkpoint after every record; the process dies while writing the second one's progress,
    # after the store has committed that record: the store is ahead of the checkpoint.
    snapshot_build.CHECKPOINT_RECORDS = 1
    write, calls = snapshot_build.atomic_write_json, []

    def write_then_die(path, value):
        calls.append(path)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        write(path, value)

    snapshot_build.atomic_write_json = write_then_die
    SnapshotSource(sys.argv[1:-1], sys.argv[-1])
    """
)


def test_a_killed_build_resumes_from_its_last_checkpoint_and_matches_a_clean_build(tmp_path, records):
    """Killed with the store ahead of the checkpoint, and a page whose newer revision came after it."""
    newer = records["enwiki"]
    older = {**newer, "version": {"identifier": 1000}, "article_body": {"html": "<p>old squirrel</p>"}}
    (tmp_path / "in").mkdir()
    first = tmp_path / "in" / "1.ndjson"
    second = tmp_path / "in" / "2.ndjson"
    first.write_text(json.dumps(older) + "\n")
    second.write_text(json.dumps(newer) + "\n" + json.dumps(records["dewiki"]) + "\n")
    cache = tmp_path / "cache"
    done = subprocess.run(
        [sys.executable, "-c", KILL_AT_SECOND_CHECKPOINT, str(first), str(second), str(cache)],
        timeout=60,
        capture_output=True,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    assert sorted(p.suffix for p in cache.iterdir()) == [".lock", ".partial"]

    resumed = SnapshotSource([first, second], cache)
    assert resumed.stats.as_dict()["resumed_after_records"] == 1
    assert resumed.stats.as_dict()["duplicate_pages"] == 0  # the old revision came first: replaced
    [hit] = resumed.search("enwiki", "squirrel", 5)
    assert hit.revision_id == newer["version"]["identifier"]
    assert resumed.manifest["wikis"] == {"dewiki": 1, "enwiki": 1}
    fresh = SnapshotSource([first, second], tmp_path / "fresh-cache")
    assert index_files(resumed) == index_files(fresh)


def test_worker_processes_build_the_same_index_and_resume_alike(tmp_path, sample_rows, squirrel_lines):
    """Two inputs of many records each: tokenised in this process, by two workers, and resumed."""
    write_articles(tmp_path / "in" / "sample.parquet", sample_rows)
    write_input(tmp_path / "in", "ndjson", squirrel_lines)
    serial = SnapshotSource(tmp_path / "in", tmp_path / "serial", workers=0)
    parallel = SnapshotSource(tmp_path / "in", tmp_path / "parallel", workers=2)
    assert parallel.manifest["preparing_workers"] == 2
    assert index_files(parallel) == index_files(serial)

    def interrupt(records_read: int) -> None:
        if records_read == 30:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        SnapshotSource(tmp_path / "in", tmp_path / "resumed", workers=1, progress=interrupt)
    resumed = SnapshotSource(tmp_path / "in", tmp_path / "resumed", workers=1)
    assert resumed.manifest["resumed_after_records"] == 30
    assert index_files(resumed) == index_files(serial)


OPEN_AND_REPORT = textwrap.dedent(
    """
    import json, sys
    from m4build.sources.wikipedia.snapshot import SnapshotSource

    source = SnapshotSource(sys.argv[1], sys.argv[2])
    print(json.dumps({"stats": source.stats.as_dict(), "folder": str(source.cache_path)}))
    """
)


def test_two_processes_opening_the_same_inputs_build_once(tmp_path, squirrel_lines):
    path = write_input(tmp_path, "ndjson", squirrel_lines)
    cache = tmp_path / "cache"
    command = [sys.executable, "-c", OPEN_AND_REPORT, str(path), str(cache)]
    children = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    reports = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()
        reports.append(json.loads(out))
    assert sorted(report["stats"].get("index_builds", 0) for report in reports) == [0, 3]
    assert {report["folder"] for report in reports} == {str(cache / next(cache.iterdir()).name)}
    assert len(list(cache.iterdir())) == 1


# --- bad input ----------------------------------------------------------------------------


def test_a_malformed_line_is_reported_with_file_and_line(tmp_path, squirrel_lines):
    path = write_input(
        tmp_path, "ndjson.gz", [squirrel_lines[0], b'{"name": "Broken", \n', squirrel_lines[2]]
    )
    with pytest.raises(InputFileError) as caught:
        SnapshotSource(path, tmp_path / "cache")
    assert f"{path}, line 2: malformed Wikimedia Enterprise record" in str(caught.value)
    assert caught.value.exit_code == ExitCode.INPUT
    assert not (tmp_path / "cache").exists() or list((tmp_path / "cache").iterdir()) == []


def test_a_record_missing_a_field_says_which(tmp_path, records):
    broken = {**records["enwiki"], "article_body": {"wikitext": "no html"}}
    lines = [json.dumps(records["dewiki"]).encode() + b"\n", json.dumps(broken).encode() + b"\n"]
    path = write_tar(tmp_path / "dump.tar.gz", {"enwiki_0.ndjson": b"".join(lines)})
    with pytest.raises(
        InputFileError, match=r"\[member enwiki_0.ndjson\], line 2: .*'article_body.html' is missing"
    ):
        SnapshotSource(path, tmp_path / "cache")


def test_wrong_types_and_bad_wiki_names_are_refused(tmp_path, records):
    for bad, problem in [
        ({"identifier": "28492"}, "'identifier' is a str, expected int"),
        ({"is_part_of": {"identifier": "../../etc"}}, "not a Wikipedia database name"),
    ]:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**records["enwiki"], **bad}))
        with pytest.raises(InputFileError, match=problem):
            SnapshotSource(path, tmp_path / "cache")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("truncated.ndjson.gz", SQUIRREL.read_bytes()[:40_000], "cannot read .* ended before"),
        ("broken.json", b'{\n  "name": "x",\n  oops\n}', r"broken.json, line 3: not valid JSON"),
        ("notes.txt", b"hello", "unknown snapshot format"),
        ("garbage.parquet", b"not a parquet file", "cannot read"),
    ],
)
def test_unreadable_files_are_reported_by_name(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=message) as caught:
        SnapshotSource(path, tmp_path / "cache")
    assert name in str(caught.value)


def test_missing_inputs_and_foreign_parquets_are_refused(tmp_path):
    with pytest.raises(InputFileError, match="no such snapshot file"):
        SnapshotSource(tmp_path / "nowhere.ndjson", tmp_path / "cache")
    path = write_articles(tmp_path / "other.parquet", [{"x": 1}], pa.schema([("x", pa.int64())]))
    with pytest.raises(InputFileError, match="not a parquet of articles"):
        SnapshotSource(path, tmp_path / "cache")
    rows = [{"wiki": "enwiki", "page_id": 1, "revision_id": 1, "title": "T", "url": "u", "html": None}]
    path = write_articles(
        tmp_path / "nulls.parquet", rows, ARTICLE_SCHEMA.set(7, pa.field("html", pa.string()))
    )
    with pytest.raises(InputFileError, match=r"nulls.parquet, row 1: .*'html' is missing"):
        SnapshotSource(path, tmp_path / "cache")
