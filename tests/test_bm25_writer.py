"""The bounded-memory BM25 writer: bm25s' own scores, any block sizes, subsets, and resuming.

Documents are the embedded sample's real articles (title + lead, as the snapshot source indexes
them) and their sections, tokenised by ``m4build.text.tokenize``.
"""

from __future__ import annotations

from pathlib import Path

import bm25s
import numpy as np
import pyarrow.parquet as pq
import pytest

from m4build.bm25_writer import Bm25Settings, Bm25Writer
from m4build.resources import data_path
from m4build.sources.wikipedia.sample import SAMPLE_ARTICLES
from m4build.sources.wikipedia.snapshot_inputs import index_text
from m4build.text.sections import parse_sections
from m4build.text.tokenize import tokenize

INDEX_FILES = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "vocab.index.json")


@pytest.fixture(scope="module")
def documents() -> list[list[str]]:
    """587 token lists: every article's title + lead, then each of its sections, and one empty one."""
    docs = []
    for row in pq.read_table(data_path(*SAMPLE_ARTICLES)).to_pylist():
        docs.append(tokenize(index_text(row["title"], row["html"])))
        docs += [tokenize(section.text) for section in parse_sections(row["html"], title=row["title"])]
    docs.insert(7, [])  # a document without a single token still counts in the average length
    return docs


@pytest.fixture(scope="module")
def queries(documents) -> list[list[str]]:
    rng = np.random.default_rng(7)
    vocabulary = sorted({token for doc in documents for token in doc})
    return [list(rng.choice(vocabulary, size=int(rng.integers(1, 12)))) for _ in range(300)]


def bm25s_reference(documents: list[list[str]], settings: Bm25Settings) -> bm25s.BM25:
    reference = bm25s.BM25(k1=settings.k1, b=settings.b)
    reference.index(documents, show_progress=False)
    return reference


def scores(retriever: bm25s.BM25, query: list[str], documents: int) -> np.ndarray:
    ids = [retriever.vocab_dict[token] for token in query if token in retriever.vocab_dict]
    return retriever.get_scores(ids) if ids else np.zeros(documents, dtype=np.float32)


def write(folder: Path, documents: list[list[str]], settings: Bm25Settings, order=None, **budgets) -> Path:
    writer = Bm25Writer(folder / "work", settings, **budgets)
    for doc in documents:
        writer.add(doc)
    writer.finish(folder / "index", order=order)
    return folder / "index"


@pytest.mark.parametrize(
    ("settings", "budgets"),
    [
        (Bm25Settings(), {}),  # everything in one block and one merge step
        (Bm25Settings(k1=0.9, b=0.4), {"block_postings": 5_000, "merge_postings": 3_000}),
        # a spill every few documents; the commonest terms are each bigger than a merge step
        (Bm25Settings(), {"block_postings": 500, "merge_postings": 200}),
    ],
)
def test_scores_are_bm25s_own_whatever_the_block_sizes(tmp_path, documents, queries, settings, budgets):
    index = write(tmp_path, documents, settings, **budgets)
    ours = bm25s.BM25.load(index, mmap=True, show_progress=False)
    reference = bm25s_reference(documents, settings)
    assert ours.scores["num_docs"] == len(documents)
    assert ours.scores["data"].shape == reference.scores["data"].shape
    assert set(ours.vocab_dict) == set(reference.vocab_dict)  # bm25s' empty token included
    for query in queries:
        assert np.array_equal(scores(ours, query, len(documents)), scores(reference, query, len(documents)))
    # each posting list is in document order, as scipy leaves a CSC matrix
    indptr, indices = ours.scores["indptr"], ours.scores["indices"]
    for term in range(0, len(indptr) - 1, 97):
        assert np.all(np.diff(indices[indptr[term] : indptr[term + 1]]) > 0)


def test_an_order_keeps_and_arranges_a_subset_of_the_documents(tmp_path, documents, queries):
    rng = np.random.default_rng(3)
    order = rng.permutation(len(documents))[: len(documents) * 2 // 3]
    index = write(tmp_path, documents, Bm25Settings(), order=order, block_postings=4_000, merge_postings=2_500)
    ours = bm25s.BM25.load(index, mmap=True, show_progress=False)
    reference = bm25s_reference([documents[slot] for slot in order], Bm25Settings())
    for query in queries:
        assert np.array_equal(scores(ours, query, len(order)), scores(reference, query, len(order)))


def test_a_writer_resumed_from_a_checkpoint_writes_the_same_index(tmp_path, documents):
    budgets = {"block_postings": 3_000, "merge_postings": 2_000}
    clean = write(tmp_path / "clean", documents, Bm25Settings(), **budgets)

    work = tmp_path / "resumed" / "work"
    writer = Bm25Writer(work, Bm25Settings(), **budgets)
    for doc in documents[:300]:
        writer.add(doc)
    state = writer.checkpoint()
    for doc in documents[300:500]:  # read, spilled and checkpointed, but the caller never saved this state
        writer.add(doc)
    writer.checkpoint()
    del writer

    resumed = Bm25Writer(work, Bm25Settings(), resume=state, **budgets)
    assert resumed.documents == 300
    for doc in documents[resumed.documents :]:
        resumed.add(doc)
    resumed.finish(tmp_path / "resumed" / "index")
    for name in INDEX_FILES:
        assert (tmp_path / "resumed" / "index" / name).read_bytes() == (clean / name).read_bytes(), name


def test_a_state_from_other_settings_is_refused(tmp_path, documents):
    writer = Bm25Writer(tmp_path / "work", Bm25Settings())
    writer.add(documents[0])
    state = writer.checkpoint()
    with pytest.raises(ValueError, match="cannot be resumed"):
        Bm25Writer(tmp_path / "work", Bm25Settings(k1=1.2), resume=state)


def test_tokens_with_line_breaks_are_refused(tmp_path):
    writer = Bm25Writer(tmp_path / "work")
    writer.add(["fine", "not\nfine"])
    with pytest.raises(ValueError, match="line break"):
        writer.checkpoint()


def test_order_must_name_distinct_added_documents(tmp_path, documents):
    writer = Bm25Writer(tmp_path / "work")
    for doc in documents[:5]:
        writer.add(doc)
    for order in ([0, 0, 1], [5], [-1]):
        with pytest.raises(ValueError, match="distinct slots"):
            writer.finish(tmp_path / "index", order=np.array(order))
