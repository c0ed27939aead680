"""Multimodal (``mm-rag``) retrieval with a tiny randomly initialised CLIP built from a config.

The CLIP reuses the BERT WordPiece tokenizer of the installed all-MiniLM-L6-v2, so nothing is
downloaded: its text config takes the tokenizer's vocabulary size and special ids. CLIP pools the
text at the first ``eos_token_id`` (transformers >= 4.31; only the legacy id 2 pools at the highest
token id), so ``eos_token_id`` is BERT's [SEP], which the tokenizer puts last, after truncation too.
The passages are cut by the index's own chunker from a hand-written corpus with two identical
sections on pages 9 and 10, whose passages tie on every query.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from index_support import minilm_path, tiny_clip

from m4build.errors import ExitCode, InputFileError, UsageError
from m4build.retrieval import multimodal_index
from m4build.retrieval.chunking import Chunker, ChunkSettings, embed_texts, passages_table
from m4build.retrieval.dense import AnnSettings, read_faiss
from m4build.retrieval.manifest import FORMAT, file_entry, model_slug, passages_path, write_manifest
from m4build.retrieval.multimodal import QueryCombination, load_multimodal_encoder
from m4build.retrieval.multimodal_index import build_multimodal_index, load_multimodal_index
from m4build.runs import atomic_write_parquet

WINDOW = 24  # the tiny CLIP's text positions: far shorter than a passage, so truncation is exercised
DUMPLINGS = "Pierogi are filled dumplings made by wrapping unleavened dough around a savoury filling."
SECTIONS = [
    (9, 0, "Pierogi", [], DUMPLINGS),
    (10, 0, "Pierogi", [], DUMPLINGS),  # the same text on another page: a tie on every query
    (27, 0, "Sushi", [], "Sushi is a Japanese dish of prepared vinegared rice with seafood and vegetables."),
    (331080, 0, "Matryoshka doll", [], "Matryoshka dolls are sets of wooden dolls of decreasing size."),
    (
        331080,
        2,
        "Matryoshka doll",
        ["History"],
        (
            "The first Russian nested doll set was carved in 1890 at the Children's Education Workshop "
            "by Vasily Zvyozdochkin from a design by Sergey Malyutin, a folk crafts painter."
        ),
    ),
]


def png(color: tuple[int, int, int], size: tuple[int, int] = (40, 24)) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, color)
    ImageDraw.Draw(image).rectangle([4, 4, 14, 14], fill=(255 - color[0], 255 - color[1], 255 - color[2]))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("multimodal")


@pytest.fixture(scope="module")
def clip(base) -> Path:
    return tiny_clip(base / "clip", seed=0)


@pytest.fixture(scope="module")
def encoder(clip):
    return load_multimodal_encoder(str(clip), device="cpu")


@pytest.fixture(scope="module")
def text_index(base) -> Path:
    """An index folder as ``m4build index --no-dense`` leaves it: ``SECTIONS`` cut by the real chunker
    with MiniLM's tokenizer, the passages file and its manifest entry (no BM25 shard: nothing here reads
    it, and building it would load sentence-transformers, seconds of start-up on a shared CPU)."""
    from transformers import AutoTokenizer

    run = base / "text-index"
    sections = [
        {
            "wiki": "enwiki",
            "language": "en",
            "page_id": page,
            "revision_id": 1000 + page,
            "section_index": section,
            "title": title,
            "section_path": path,
            "text": text,
        }
        for page, section, title, path, text in SECTIONS
    ]
    chunker = Chunker(AutoTokenizer.from_pretrained(minilm_path()), ChunkSettings(256, 32, 256))
    table = passages_table(chunker.run(sections))
    atomic_write_parquet(run / passages_path("en"), table)
    entry = file_entry(run, passages_path("en"), "passages", rows=table.num_rows)
    write_manifest(
        run, {"format": FORMAT, "languages": {"en": {"passages": table.num_rows, "files": [entry]}}}
    )
    return run


@pytest.fixture(scope="module")
def built(text_index, encoder):
    return build_multimodal_index(text_index, "en", encoder)


def copy_of(run: Path, target: Path) -> Path:
    shutil.copytree(run, target)
    return target


def shard_vectors(folder: Path) -> np.ndarray:
    index = read_faiss(folder / "index.faiss", None)
    return index.reconstruct_n(0, index.ntotal)


def passage_texts(run: Path) -> list[str]:
    return embed_texts(pq.read_table(run / passages_path("en")))


# -- the encoder ---------------------------------------------------------------------------------------


def test_vectors_are_unit_length_deterministic_and_combined_by_the_recorded_rule(encoder):
    texts = ["Pierogi are dumplings", "Sushi", "Matryoshka dolls"]
    passages = encoder.encode_passages(texts)
    assert passages.shape == (3, 16) and passages.dtype == np.float32 and encoder.dimension == 16
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(encoder.encode_passages(texts), passages)
    np.testing.assert_allclose(encoder.encode_passages(texts, batch_size=1), passages, atol=1e-6)

    images = [png((200, 30, 30)), png((30, 200, 30)), png((30, 30, 200), size=(17, 50))]
    queries = encoder.encode_queries(images, texts)
    assert queries.shape == (3, 16)
    np.testing.assert_allclose(np.linalg.norm(queries, axis=1), 1.0, rtol=1e-5)
    image_side, text_side = encoder.encode_images(images), encoder.encode_texts(texts)
    expected = 0.5 * image_side + 0.5 * text_side  # both sides are unit vectors already
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(queries, expected, atol=1e-6)
    assert not np.allclose(queries, image_side, atol=1e-3) and not np.allclose(queries, text_side, atol=1e-3)
    image_only = QueryCombination(image_weight=1.0, text_weight=0.0)
    np.testing.assert_allclose(image_only.combine(image_side, text_side), image_side, atol=1e-6)
    assert encoder.combination.describe() == {
        "rule": "l2(image_weight * l2(image) + text_weight * l2(text))",
        "image_weight": 0.5,
        "text_weight": 0.5,
    }
    with pytest.raises(UsageError, match="weights"):
        QueryCombination(0.0, 0.0)


def test_text_longer_than_the_window_is_cut_explicitly(encoder):
    assert encoder.max_text_tokens == WINDOW and encoder.describe()["max_text_tokens"] == WINDOW
    long = "matryoshka dolls are painted wooden figures " * 10
    # Everything past the window is dropped, so what follows it changes nothing.
    np.testing.assert_array_equal(
        encoder.encode_texts([long]), encoder.encode_texts([long + " carved in 1890 in Abramtsevo"])
    )
    assert encoder.count_truncated([long, "short text"]) == 1


def test_an_undecodable_image_is_named(encoder):
    good = png((10, 20, 30))
    with pytest.raises(InputFileError) as garbage:
        encoder.encode_queries([good, b"not an image at all"], ["q1", "q2"], names=["cvqa-1", "cvqa-2"])
    assert "query image 1 ('cvqa-2')" in str(garbage.value) and garbage.value.exit_code == ExitCode.INPUT
    with pytest.raises(InputFileError, match=r"query image 0 cannot be decoded"):
        encoder.encode_images([good[:60]])  # a truncated PNG: the header reads, the pixels do not
    with pytest.raises(UsageError, match="2 images but 1 questions"):
        encoder.encode_queries([good, good], ["q"])
    with pytest.raises(UsageError, match="list"):
        encoder.encode_queries(good, "q")


def test_a_text_only_model_is_refused_as_not_a_dual_encoder():
    with pytest.raises(UsageError, match="not a dual encoder"):
        load_multimodal_encoder(minilm_path(), device="cpu")


# -- the index --------------------------------------------------------------------------------------------


def test_manifest_records_model_combination_passages_and_files(built, text_index, clip):
    manifest = built.manifest
    assert not built.reused
    assert built.folder == text_index / "indexes" / "multimodal" / model_slug(str(clip)) / "en"
    assert manifest["format"] == "m4build-mm-index/1" and manifest["language"] == "en"
    assert manifest["encoder"]["model"] == str(clip) and manifest["encoder"]["revision"].startswith("sha256:")
    assert manifest["encoder"]["dimension"] == 16 and manifest["encoder"]["architecture"] == "clip"
    assert manifest["queries"]["image_weight"] == manifest["queries"]["text_weight"] == 0.5
    count = pq.read_table(text_index / passages_path("en")).num_rows
    assert manifest["passages"]["count"] == count == len(SECTIONS)
    assert manifest["passages"]["truncated"] >= 1  # the History passage is longer than 24 tokens
    assert {entry["path"] for entry in manifest["files"]} == {"index.faiss", "ids.parquet"}
    assert next(e for e in manifest["files"] if e["path"] == "index.faiss")["index_type"] == "flat"
    assert (built.folder / "manifest.json").is_file()
    assert not (text_index / "state" / "index" / "multimodal").exists() or not any(
        (text_index / "state" / "index" / "multimodal").rglob("*.npy")
    )


def test_search_ranks_by_score_and_breaks_ties_by_passage_id(built, text_index, encoder):
    searcher = load_multimodal_index(text_index, "en", encoder=encoder)
    assert len(searcher) == len(SECTIONS) and searcher.combination == encoder.combination
    images, questions = [png((200, 30, 30)), png((30, 30, 200))], ["Which dumpling is this?", "What doll?"]
    results = searcher.search(images, questions, k=len(SECTIONS))
    vectors = shard_vectors(built.folder)
    ids = pq.read_table(built.folder / "ids.parquet").column("id").to_pylist()
    tied = ["enwiki:10:1010:0:0", "enwiki:9:1009:0:0"]
    # The shard lists page 9 before page 10 (article order), and their vectors are identical: only an
    # explicit tie-break puts "enwiki:10..." (smaller as a string) first.
    assert ids[:2] == tied[::-1]
    np.testing.assert_array_equal(vectors[0], vectors[1])
    expected_scores = encoder.encode_queries(images, questions) @ vectors.T
    for hits, scores in zip(results, expected_scores):
        assert [hit.rank for hit in hits] == list(range(1, len(SECTIONS) + 1))
        assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
        by_id = dict(zip(ids, scores))
        for hit in hits:
            assert hit.score == pytest.approx(float(by_id[hit.id]), abs=1e-5)
        order = [hit.id for hit in hits]
        assert order.index(tied[0]) + 1 == order.index(tied[1])
        dumpling = hits[order.index(tied[0])]
        assert dumpling.title == "Pierogi" and dumpling.page_id == 10 and dumpling.text == DUMPLINGS
    top = searcher.search(images[:1], questions[:1], k=2)[0]
    assert [hit.rank for hit in top] == [1, 2] and [hit.id for hit in top] == [
        hit.id for hit in results[0][:2]
    ]
    assert searcher.search(images, questions, k=50) == results  # k beyond the shard: every passage
    with pytest.raises(UsageError, match="k must be at least 1"):
        searcher.search(images, questions, k=0)


def test_a_tie_at_the_cut_off_is_resolved_by_fetching_deeper(built, text_index, encoder, monkeypatch):
    # A question-only query equal to the tied passages' text puts both at the top with the same score;
    # fetching only k=1 from FAISS would return page 9 (first in the shard), not the smaller id.
    monkeypatch.setattr(multimodal_index, "TIE_MARGIN", 0)
    monkeypatch.setattr(encoder, "combination", QueryCombination(image_weight=0.0, text_weight=1.0))
    searcher = load_multimodal_index(text_index, "en", encoder=encoder)
    hits = searcher.search([png((0, 0, 0))], [f"Pierogi\n{DUMPLINGS}"], k=1)[0]
    assert [hit.id for hit in hits] == ["enwiki:10:1010:0:0"] and hits[0].score == pytest.approx(1.0)


def test_a_killed_build_resumes_from_its_parts(text_index, encoder, base, monkeypatch):
    run = copy_of(text_index, base / "resume")
    shutil.rmtree(run / "indexes" / "multimodal")
    encode = encoder.encode_passages
    calls: list[int] = []

    def killed_in_the_second_part(texts, batch_size=32):
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return encode(texts, batch_size)

    monkeypatch.setattr(encoder, "encode_passages", killed_in_the_second_part)
    with pytest.raises(KeyboardInterrupt):
        build_multimodal_index(run, "en", encoder, part_size=2, batch_size=2)
    assert not list((run / "indexes" / "multimodal").glob("*/en"))
    assert len(list((run / "state" / "index" / "multimodal").rglob("part-*.npy"))) == 1

    calls.clear()

    def counted(texts, batch_size=32):
        calls.append(len(texts))
        return encode(texts, batch_size)

    monkeypatch.setattr(encoder, "encode_passages", counted)
    result = build_multimodal_index(run, "en", encoder, part_size=2, batch_size=2)
    assert not result.reused and sum(calls) == len(SECTIONS) - 2  # the finished part was not redone
    np.testing.assert_allclose(shard_vectors(result.folder), encode(passage_texts(run)), atol=1e-5)
    assert not list((run / "state" / "index" / "multimodal").rglob("part-*.npy"))  # parts cleaned up


def test_a_rerun_reuses_the_shard_and_a_new_combination_only_rewrites_the_manifest(
    built, text_index, encoder, base, monkeypatch
):
    def never(texts, batch_size=32):
        raise AssertionError("re-embedded")

    monkeypatch.setattr(encoder, "encode_passages", never)
    again = build_multimodal_index(text_index, "en", encoder)
    assert again.reused and again.manifest == built.manifest

    run = copy_of(text_index, base / "reweighted")
    monkeypatch.setattr(encoder, "combination", QueryCombination(image_weight=0.7, text_weight=0.3))
    reweighted = build_multimodal_index(run, "en", encoder)
    assert reweighted.reused and reweighted.manifest["files"] == built.manifest["files"]
    assert reweighted.manifest["queries"]["image_weight"] == 0.7
    searcher = load_multimodal_index(run, "en")  # the model is loaded on first search, with this rule
    assert searcher.combination == QueryCombination(0.7, 0.3)


def test_a_changed_model_is_refused_with_a_clear_message(text_index, base, clip):
    run = copy_of(text_index, base / "changed-model")
    shutil.rmtree(run / "indexes" / "multimodal")
    model = tiny_clip(base / "models" / "clip", seed=0)
    build_multimodal_index(run, "en", load_multimodal_encoder(str(model), device="cpu"))
    assert load_multimodal_index(run, "en").combination == QueryCombination()

    with pytest.raises(UsageError, match="was built with") as other:
        load_multimodal_index(run, "en", model=str(tiny_clip(base / "other" / "clip", seed=1)))
    assert "different models" in str(other.value) and other.value.exit_code == ExitCode.USAGE
    # The same weights under another path are accepted.
    same_weights = load_multimodal_index(run, "en", model=str(clip))
    assert same_weights.model == str(clip) and len(same_weights) == len(SECTIONS)

    tiny_clip(model, seed=1)  # new weights at the path the shard was built with
    with pytest.raises(UsageError, match=r"the model at .* changed since the multimodal index"):
        load_multimodal_index(run, "en")
    rebuilt = build_multimodal_index(run, "en", load_multimodal_encoder(str(model), device="cpu"))
    assert not rebuilt.reused and load_multimodal_index(run, "en") is not None


def test_changed_passages_make_the_shard_refused(built, text_index, base, encoder):
    run = copy_of(text_index, base / "changed-passages")
    path = run / passages_path("en")
    table = pq.read_table(path)
    pq.write_table(table.slice(1), path)
    with pytest.raises(InputFileError, match="changed .* since the multimodal index"):
        load_multimodal_index(run, "en", encoder=encoder)
    with pytest.raises(UsageError, match="no multimodal shard for language 'zh'"):
        load_multimodal_index(text_index, "zh", encoder=encoder)


def test_above_the_ann_threshold_the_shard_is_hnsw_and_finds_the_same_passages(
    built, text_index, base, encoder
):
    run = copy_of(text_index, base / "hnsw")
    shutil.rmtree(run / "indexes" / "multimodal")
    hnsw = build_multimodal_index(run, "en", encoder, ann=AnnSettings(threshold=2, hnsw_m=4, ef_search=8))
    assert next(e for e in hnsw.manifest["files"] if e["path"] == "index.faiss")["index_type"] == "hnsw"
    query = [png((120, 90, 10))], ["Which dish is this?"]
    approximate = load_multimodal_index(run, "en", encoder=encoder).search(*query, k=3)[0]
    exact = load_multimodal_index(text_index, "en", encoder=encoder).search(*query, k=3)[0]
    assert [hit.id for hit in approximate] == [hit.id for hit in exact]  # five vectors: HNSW is exact here
