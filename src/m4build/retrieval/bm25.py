"""BM25 shards: one bm25s index per language over ``m4build.text.tokenize`` tokens.

Why this tokenizer for every language, including zh, ja, th and other scripts without spaces:
queries and passages must be cut the same way, and a corpus mixes scripts, so the rules follow
each character's script rather than a language code (words split on non-word characters,
overlapping character bigrams for Han, kana, Hangul, Thai, Lao, Khmer, Myanmar and Tibetan, NFKC
and casefold everywhere); the full rationale is in ``m4build.text.tokenize``. It is the tokenizer
the corpus builder searches snapshots with, so one rule set serves the whole project, and it needs
no per-language segmenter. BM25 indexes the same ``embed_text`` as the dense side (title and
section path, then the passage), because titles carry most of an article's topic words.

Files: what ``bm25s.BM25.save`` writes, made by ``m4build.bm25_writer`` in bounded memory (the
same scores as bm25s), plus ``ids.parquet`` (row i is passage ``ids[i]``); loaded with
``mmap=True`` so that a large language costs page cache, not heap.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
import pyarrow as pa

from m4build.bm25_writer import Bm25Settings, Bm25Writer
from m4build.retrieval.manifest import replace_dir
from m4build.runs import atomic_write_parquet
from m4build.text.tokenize import tokenize


def write_bm25_shard(folder: Path, texts: Sequence[str], ids: Sequence[str], settings: Bm25Settings) -> None:
    """Index ``texts`` and write the bm25s files and the id map into ``folder`` (swapped in atomically)."""

    def fill(staging: Path) -> None:
        work = staging / ".bm25-work"
        writer = Bm25Writer(work, settings)
        for text in texts:
            writer.add(tokenize(text))
        writer.finish(staging)
        shutil.rmtree(work)
        atomic_write_parquet(staging / "ids.parquet", pa.table({"id": pa.array(list(ids), pa.string())}))

    replace_dir(folder, fill)


class Bm25Shard:
    """A memory-mapped bm25s index that scores every passage of a language for a query."""

    def __init__(self, folder: Path):
        self.retriever = bm25s.BM25.load(folder, mmap=True, show_progress=False)
        self.vocab = self.retriever.vocab_dict

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage; tokens the corpus never saw contribute nothing."""
        tokens = [token for token in tokenize(query) if token in self.vocab]
        if not tokens:
            return np.zeros(self.retriever.scores["num_docs"], dtype=np.float32)
        return np.asarray(self.retriever.get_scores(tokens), dtype=np.float32)


__all__ = ["Bm25Settings", "Bm25Shard", "write_bm25_shard"]
