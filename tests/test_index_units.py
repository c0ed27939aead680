"""Index building blocks: model conventions, chunking, fusion, FAISS type by size, the E5 prefix
path with a tiny random model, resumability, and the errors of bad input.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from index_support import copy_run, sample_corpus, tiny_e5

from m4build.errors import InputFileError, UsageError
from m4build.recipes import load_recipe
from m4build.retrieval import build as index_pipeline
from m4build.retrieval import load_index
from m4build.retrieval.build import IndexJob, build_index
from m4build.retrieval.chunking import Chunker, ChunkSettings, embed_text, passage_id
from m4build.retrieval.conventions import conventions_for, family_of
from m4build.retrieval.dense import AnnSettings, build_faiss, load_embedder
from m4build.retrieval.fusion import reciprocal_rank_fusion, top_k_scores


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("index-units")


@pytest.fixture(scope="module")
def e5_model(base) -> Path:
    return tiny_e5(base)


@pytest.fixture(scope="module")
def corpus(base) -> Path:
    return sample_corpus(base)


def recipe_for(model: Path, **dense) -> dict:
    recipe = load_recipe("index")
    recipe["dense"].update(model=str(model), **dense)
    return recipe


# -- conventions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("intfloat/multilingual-e5-large", "e5"),
        ("intfloat/multilingual-e5-large-instruct", "e5-instruct"),
        ("intfloat/e5-base-v2", "e5"),
        ("BAAI/bge-m3", "bge-m3"),
        ("BAAI/bge-small-en-v1.5", "bge-en"),
        ("sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers"),
        ("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2", "sentence-transformers"),
        ("thenlper/gte-base", "gte"),
        ("nomic-ai/nomic-embed-text-v1.5", "nomic"),
        ("/models/some-encoder", "unknown"),
        ("/tmp/x/e5-tiny", "e5"),
    ],
)
def test_model_families_are_recognised(model, family):
    assert family_of(model) == family


def test_conventions_precedence_recipe_over_model_over_table():
    e5 = conventions_for("intfloat/multilingual-e5-small")
    assert (e5.query_prefix, e5.passage_prefix, e5.normalize, e5.source) == (
        "query: ",
        "passage: ",
        True,
        "table",
    )
    instruct = conventions_for("intfloat/multilingual-e5-large-instruct")
    assert instruct.query_prefix.startswith("Instruct: ") and instruct.query_prefix.endswith("\nQuery: ")
    assert instruct.passage_prefix == ""
    unknown = conventions_for("/models/encoder")
    assert (unknown.family, unknown.query_prefix, unknown.normalize, unknown.source) == (
        "unknown",
        "",
        True,
        "default",
    )
    declared = conventions_for("/models/encoder", model_prompts={"query": "q> ", "document": "d> "})
    assert (declared.query_prefix, declared.passage_prefix, declared.source) == ("q> ", "d> ", "model")
    empty_defaults = conventions_for("intfloat/e5-small", model_prompts={"query": "", "document": ""})
    assert empty_defaults.query_prefix == "query: "
    override = conventions_for("intfloat/e5-small", {"query_prefix": "Q: ", "normalize": False})
    assert (override.query_prefix, override.passage_prefix, override.normalize, override.source) == (
        "Q: ",
        "passage: ",
        False,
        "recipe",
    )
    with pytest.raises(UsageError, match="unknown model family"):
        conventions_for("x", {"family": "nope"})


# -- chunking ---------------------------------------------------------------------------------------


def test_chunks_follow_the_model_tokenizer_with_overlap_and_skip_empty_sections(e5_model):
    embedder = load_embedder(str(e5_model))
    words = " ".join(f"w{i}" for i in range(200))  # "w123" is 4 word pieces: w ##1 ##2 ##3
    chunker = Chunker(
        embedder.tokenizer, ChunkSettings(size=40, overlap=8, max_seq_length=64, passage_prefix="passage: ")
    )
    section = {
        "wiki": "enwiki",
        "language": "en",
        "page_id": 7,
        "revision_id": 9,
        "section_index": 3,
        "title": "T",
        "section_path": ["A", "B"],
        "text": words,
    }
    passages = list(chunker.run([section, {**section, "section_index": 4, "text": "  \n "}]))
    assert [p["id"] for p in passages][:2] == [passage_id("enwiki", 7, 9, 3, 0), "enwiki:7:9:3:1"]
    assert {p["section_index"] for p in passages} == {3}  # the blank section gave nothing
    for passage in passages:
        tokens = len(embedder.tokenizer(embed_text("T", ["A", "B"], passage["text"]))["input_ids"])
        assert tokens + len(embedder.tokenizer("passage: ", add_special_tokens=False)["input_ids"]) <= 64
        assert passage["text"] == passage["text"].strip() and passage["text"] in words
    # consecutive passages overlap, and every cut falls between words
    first, second = passages[0]["text"].split(), passages[1]["text"].split()
    assert second[0] in first[-4:]  # 8 tokens of overlap: 2-3 words
    vocabulary = set(words.split())
    assert all(set(p["text"].split()) <= vocabulary for p in passages)
    assert passages[-1]["text"].endswith("w199")


# -- fusion and tie-breaking ------------------------------------------------------------------------


def test_reciprocal_rank_fusion_on_a_hand_made_example():
    dense = ["b", "a", "c"]
    bm25 = ["c", "d", "a"]
    fused = reciprocal_rank_fusion([dense, bm25], k=4)
    expected = {
        "a": 1 / 62 + 1 / 63,
        "b": 1 / 61,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 62,
    }
    assert [passage for passage, _ in fused] == ["c", "a", "b", "d"]
    assert all(score == pytest.approx(expected[passage]) for passage, score in fused)
    # equal fused scores: the lower passage id wins, whatever the input order
    assert [p for p, _ in reciprocal_rank_fusion([["y", "x"], ["x", "y"]], k=2)] == ["x", "y"]


def test_top_k_keeps_ties_at_the_cut_and_breaks_them_by_id():
    scores = np.array([1.0, 3.0, 2.0, 2.0, 0.0], dtype=np.float32)
    ids = ["e", "d", "c", "b", "a"]
    assert top_k_scores(scores, ids, 2, positive_only=True) == [("d", 3.0), ("b", 2.0)]
    assert [i for i, _ in top_k_scores(scores, ids, 10, positive_only=True)] == ["d", "b", "c", "e"]


# -- FAISS index type by size -----------------------------------------------------------------------


def test_flat_below_the_threshold_hnsw_from_it():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((64, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    flat, kind = build_faiss(vectors, AnnSettings(threshold=65))
    assert kind == "flat" and type(flat).__name__ == "IndexFlatIP"
    hnsw, kind = build_faiss(vectors, AnnSettings(threshold=64, hnsw_m=8, ef_construction=40, ef_search=32))
    assert kind == "hnsw" and type(hnsw).__name__ == "IndexHNSWFlat" and hnsw.hnsw.efSearch == 32
    _, rows = hnsw.search(vectors[:5], 1)
    assert rows[:, 0].tolist() == [0, 1, 2, 3, 4]  # each vector finds itself


# -- the E5 prefix path, end to end with a tiny random model ----------------------------------------


def test_e5_prefixes_are_applied_when_building_and_searching(e5_model, corpus, base, monkeypatch):
    run = copy_run(corpus, base / "e5-run")
    seen: list[str] = []
    from sentence_transformers import SentenceTransformer

    real_encode = SentenceTransformer.encode

    def spy(self, inputs, *args, **kwargs):
        seen.extend(inputs)
        return real_encode(self, inputs, *args, **kwargs)

    monkeypatch.setattr(SentenceTransformer, "encode", spy)
    recipe = recipe_for(e5_model, ann_threshold=10)  # a tiny threshold: this shard becomes HNSW
    build_index(IndexJob(run=run, recipe=recipe, languages=["en"], bm25=False))
    first = pq.read_table(run / "indexes" / "passages" / "en" / "passages.parquet").slice(0, 1).to_pylist()[0]
    assert f"passage: {embed_text(first['title'], first['section_path'], first['text'])}" in seen
    assert all(text.startswith("passage: ") for text in seen)
    manifest = json.loads((run / "indexes" / "manifest.json").read_text())
    dense = manifest["dense"]
    assert (dense["family"], dense["query_prefix"], dense["passage_prefix"]) == ("e5", "query: ", "passage: ")
    shard = next(f for f in manifest["languages"]["en"]["files"] if f["kind"] == "dense")
    assert shard["index_type"] == "hnsw" and shard["vectors"] == manifest["languages"]["en"]["passages"]

    seen.clear()
    hits = load_index(run, "en").search(["nesting doll", "squirrel"], k=3, mode="dense")
    assert seen == ["query: nesting doll", "query: squirrel"]
    assert [len(line) for line in hits] == [3, 3] and [h.rank for h in hits[0]] == [1, 2, 3]


def test_a_copy_of_the_same_model_is_accepted_a_different_one_refused(e5_model, base):
    run = base / "e5-run"
    copy = shutil.copytree(e5_model, base / "elsewhere" / "e5-tiny")
    assert load_index(run, "en", model=str(copy)).search("doll", k=1, mode="dense")[0]
    other = tiny_e5(base / "other", name="e5-tiny-other")
    (other / "README.md").write_text("a different model\n")
    with pytest.raises(UsageError, match="was built with") as error:
        load_index(run, "en", model=str(other))
    assert "m4build index RUN --model" in error.value.hint


# -- resumability ------------------------------------------------------------------------------------


def test_a_failed_shard_is_resumed_and_finished_shards_are_not_redone(e5_model, corpus, base, monkeypatch):
    run = copy_run(corpus, base / "resume-run")
    recipe = recipe_for(e5_model, checkpoint_every=50)
    real_write = index_pipeline.write_dense_shard

    def fail_on_zh(folder, *args, **kwargs):
        if folder.name == "zh":
            raise KeyboardInterrupt  # as if killed while writing the second language
        return real_write(folder, *args, **kwargs)

    monkeypatch.setattr(index_pipeline, "write_dense_shard", fail_on_zh)
    with pytest.raises(KeyboardInterrupt):
        build_index(IndexJob(run=run, recipe=recipe, bm25=False))
    en_shard = next((run / "indexes" / "dense").glob("*/en/index.faiss"))
    before = (en_shard.stat().st_mtime_ns, en_shard.read_bytes())
    zh_parts = sorted((run / "state" / "index" / "embeddings").glob("*/zh/part-*.npy"))
    assert len(zh_parts) >= 2  # zh's embeddings were checkpointed before the failure

    monkeypatch.setattr(index_pipeline, "write_dense_shard", real_write)
    encoded: list[int] = []
    from m4build.retrieval.dense import Embedder

    real_encode = Embedder.encode_passages

    def counting_encode(self, texts, batch_size=32):
        encoded.append(len(texts))
        return real_encode(self, texts, batch_size)

    monkeypatch.setattr(Embedder, "encode_passages", counting_encode)
    result = build_index(IndexJob(run=run, recipe=recipe, bm25=False))
    assert result.reused["embed"] == ["en"] and result.built["embed"] == ["zh"]
    assert encoded == []  # every zh part was reused, nothing re-embedded
    assert (en_shard.stat().st_mtime_ns, en_shard.read_bytes()) == before
    assert not list((run / "state" / "index" / "embeddings").glob("*/zh/part-*.npy"))  # parts cleared

    again = build_index(IndexJob(run=run, recipe=recipe, bm25=False))
    assert again.built == {} and sorted(again.reused["embed"]) == ["en", "zh"]


# -- bad input ----------------------------------------------------------------------------------------


def test_checksum_mismatch_names_the_file(base):
    run = copy_run(base / "e5-run", base / "corrupt-run")
    shard = next((run / "indexes" / "dense").glob("*/en/index.faiss"))
    shard.write_bytes(shard.read_bytes()[:-7] + b"garbage")
    with pytest.raises(InputFileError, match="checksum mismatch") as error:
        load_index(run, "en")
    assert str(shard) in error.value.message and "m4build index" in error.value.hint


def test_missing_language_lists_the_available_ones(base):
    with pytest.raises(UsageError, match="no language 'de'") as error:
        load_index(base / "e5-run", "de")
    assert "Available languages: en." in error.value.hint


def test_a_run_folder_without_corpus_is_refused(tmp_path, e5_model):
    with pytest.raises(InputFileError, match="has no corpus") as error:
        build_index(IndexJob(run=tmp_path, recipe=recipe_for(e5_model)))
    assert "m4build corpus" in error.value.hint


def test_unknown_corpus_language_lists_the_available_ones(corpus, e5_model):
    with pytest.raises(UsageError, match="no language xx") as error:
        build_index(IndexJob(run=corpus, recipe=recipe_for(e5_model), languages=["xx"]))
    assert "en, zh" in error.value.hint


def test_a_corrupted_shard_is_refused_even_without_checksums(base):
    run = copy_run(base / "e5-run", base / "truncated-run")
    shard = next((run / "indexes" / "dense").glob("*/en/index.faiss"))
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(InputFileError, match="cannot be read by FAISS") as error:
        load_index(run, "en", verify=False)
    assert str(shard) in error.value.message


def test_a_corpus_file_without_a_needed_column_is_named(corpus, base, e5_model):
    run = copy_run(corpus, base / "no-column-run")
    path = next((run / "data" / "corpus" / "en").glob("*.parquet"))
    pq.write_table(pq.read_table(path).drop(["section_path"]), path)
    with pytest.raises(InputFileError, match="lacks the column") as error:
        build_index(IndexJob(run=run, recipe=recipe_for(e5_model), languages=["en"]))
    assert str(path) in error.value.message and "section_path" in error.value.message
