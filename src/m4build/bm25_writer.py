"""bm25s indexes built in bounded memory: postings spilled in blocks, merged a term range at a time.

Why not ``bm25s.BM25().index``: it needs every document's token ids in memory, then builds the
score matrix from them with several full-size intermediate arrays. Measured on 1M synthetic
Wikipedia leads (``benchmarks/ravenea_bm25.py``), that peaked at 6.5-8.4 GiB behind our streaming
reader and 13.9-15.8 GiB for bare bm25s; English Wikipedia's 6M articles would need several times
this machine's 24 GiB. Here memory is bounded by the vocabulary and two buffer sizes, not by the
number of documents:

1. ``add`` turns one document's tokens into (term id, term frequency) pairs and its length.
   Pairs accumulate in a block; a full block is sorted by term and spilled to disk, with the
   offsets of each term's run, so any term range of a spill is one contiguous read.
2. ``finish`` merges: for consecutive term ranges of at most ``merge_postings`` postings, it reads
   that range from every spill, puts the postings in (term, document) order, scores them, and
   appends them to the output arrays, which are written through plain file writes (never a
   memory map, so written pages are not charged to the process).

The files are exactly what ``bm25s.BM25.save`` writes (``data``/``indices``/``indptr`` of the CSC
score matrix, ``vocab.index.json``, ``params.index.json``, with bm25s' empty token), so
``bm25s.BM25.load(folder, mmap=True)`` reads them and scores as bm25s would: the scores follow
bm25s' "lucene" formulas step for step (float64 arithmetic, idf rounded to float32 first, the
product stored as float32). A test checks them against bm25s on real articles.

Resumable. ``checkpoint`` spills the open block, appends the new vocabulary and document lengths
to their files, and returns the writer's state: a small dict the caller saves with its own
progress, atomically, so that both always agree. ``Bm25Writer(work, resume=state)`` continues
from that state; whatever was written to the work folder after it is cut off or ignored. The
caller then feeds again, in the same order, the documents that came after its checkpoint.

Documents are numbered by arrival ("slots"). ``finish(order=...)`` picks which slots make the
index and in which order (a caller that dropped superseded revisions, or sorts by page id);
by default every slot, in arrival order.
"""

from __future__ import annotations

import json
import shutil
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from m4build.runs import atomic_write_json, atomic_write_text

_VOCAB = "vocab.txt"  # one token per line, in id order
_LENGTHS = "lengths.i4"  # document lengths in tokens, int32, in slot order
_SPILLS = "spills"
_FORMAT = 1
_POSTING = np.dtype([("slot", "<i4"), ("tf", "<i4")])
_EMPTY_TOKEN = ""  # bm25s adds it to every vocabulary it builds, with the last id


@dataclass(frozen=True)
class Bm25Settings:
    k1: float = 1.5
    b: float = 0.75


@dataclass(frozen=True)
class _Spill:
    """One sorted block on disk: postings in (term, slot) order, and where each term's run starts."""

    postings: Path
    terms: np.ndarray  # int32, the distinct terms of the block, ascending
    bounds: np.ndarray  # int64, len(terms) + 1: run i is postings[bounds[i]:bounds[i + 1]]

    def runs(self, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Postings of terms in ``[first, stop)``, and the term of each, read from disk in one go."""
        lo, hi = np.searchsorted(self.terms, [first, stop])
        start, end = int(self.bounds[lo]), int(self.bounds[hi])
        size = _POSTING.itemsize
        postings = np.fromfile(self.postings, dtype=_POSTING, count=end - start, offset=start * size)
        terms = np.repeat(self.terms[lo:hi], np.diff(self.bounds[lo : hi + 1]))
        return postings, terms


class Bm25Writer:
    """Collects tokenised documents in ``work`` and writes a bm25s index of them in bounded memory.

    ``block_postings`` bounds the open block (12 bytes a posting while collecting, ~2x that while
    sorting); ``merge_postings`` bounds one merge step (~70 bytes a posting, measured). The vocabulary itself
    stays in memory (a dict of the distinct tokens).
    """

    def __init__(
        self,
        work: Path,
        settings: Bm25Settings = Bm25Settings(),
        *,
        resume: dict[str, Any] | None = None,
        block_postings: int = 8_000_000,
        merge_postings: int = 8_000_000,
    ) -> None:
        self.work = work
        self.settings = settings
        self.block_postings = block_postings
        self.merge_postings = merge_postings
        # A missing token gets the next id, assigned in C (see ``add``).
        self._vocab: defaultdict[str, int] = defaultdict()
        self._lengths = array("i")
        self._spills = 0
        self._saved_vocab = 0
        self._saved_docs = 0
        self._block_terms: list[np.ndarray] = []
        self._block_counts: list[np.ndarray] = []
        self._block_slots = array("i")  # the slot of each document in the block
        self._block_sizes = array("i")  # how many postings each of those documents has
        self._block_postings = 0
        if resume is None:
            shutil.rmtree(work, ignore_errors=True)
            (work / _SPILLS).mkdir(parents=True)
        else:
            self._reopen(resume)
        self._vocab.default_factory = self._vocab.__len__

    @property
    def documents(self) -> int:
        """Documents added so far, checkpointed or not; the next document's slot."""
        return len(self._lengths)

    @property
    def vocabulary(self) -> int:
        """Distinct tokens seen so far (the index's vocabulary, before bm25s' empty token)."""
        return len(self._vocab)

    def add(self, tokens: Iterable[str] | Counter[str]) -> int:
        """Adds one document, its tokens or their counts; returns its slot.

        Tokens must not contain a line break. Counting first and looking up only the distinct
        tokens halves the cost of this step (measured: 42 against 78 us for 330 Zipf-distributed
        tokens); a caller may count elsewhere (another process) and pass the ``Counter``.
        """
        slot = len(self._lengths)
        counts = tokens if isinstance(tokens, Counter) else Counter(tokens)
        self._lengths.append(counts.total())
        if counts:
            term_ids = array("i", map(self._vocab.__getitem__, counts))
            self._block_terms.append(np.frombuffer(term_ids, np.int32))
            self._block_counts.append(np.frombuffer(array("i", counts.values()), np.int32))
            self._block_slots.append(slot)
            self._block_sizes.append(len(counts))
            self._block_postings += len(counts)
            if self._block_postings >= self.block_postings:
                self._spill()
        return slot

    def checkpoint(self) -> dict[str, Any]:
        """Puts every document added so far on disk; returns the state to resume from."""
        self._spill()
        new_tokens = list(islice(self._vocab, self._saved_vocab, None))
        if any("\n" in token or "\r" in token for token in new_tokens):
            raise ValueError("a token contains a line break; tokens are stored one per line")
        with (self.work / _VOCAB).open("a", encoding="utf-8", newline="\n") as handle:
            handle.write("".join(f"{token}\n" for token in new_tokens))
        with (self.work / _LENGTHS).open("ab") as handle:
            handle.write(self._lengths[self._saved_docs :].tobytes())
        self._saved_vocab, self._saved_docs = len(self._vocab), len(self._lengths)
        return {
            "format": _FORMAT,
            "k1": self.settings.k1,
            "b": self.settings.b,
            "documents": self._saved_docs,
            "vocabulary": self._saved_vocab,
            "vocabulary_bytes": (self.work / _VOCAB).stat().st_size,
            "spills": self._spills,
        }

    def finish(self, folder: Path, order: np.ndarray | None = None) -> int:
        """Writes the index of the slots in ``order`` (default: all, by slot) into ``folder``.

        Returns the number of documents indexed. The work folder is left as it was at the
        checkpoint this starts with, so that a caller killed before saving its own progress can
        resume; the caller removes it once the index is safe.
        """
        self.checkpoint()
        slots = len(self._lengths)
        order = np.arange(slots, dtype=np.int64) if order is None else np.asarray(order, dtype=np.int64)
        if len(order) and (order.min() < 0 or order.max() >= slots or len(np.unique(order)) != len(order)):
            raise ValueError("order must list distinct slots of added documents")
        position = np.full(slots, -1, dtype=np.int32)
        position[order] = np.arange(len(order), dtype=np.int32)
        lengths = np.frombuffer(self._lengths, dtype=np.int32).astype(np.int64)[order]
        average_length = lengths.mean() if len(lengths) else 0.0
        spills = [self._open_spill(number) for number in range(self._spills)]
        vocabulary = len(self._vocab)
        per_term = self._kept_postings_per_term(spills, position, vocabulary, dropped=len(order) < slots)

        folder.mkdir(parents=True, exist_ok=True)
        total = int(per_term.sum())
        data = _NpyAppender(folder / "data.csc.index.npy", np.float32, total)
        indices = _NpyAppender(folder / "indices.csc.index.npy", np.int32, total)
        for first, stop in _term_ranges(per_term, self.merge_postings):
            postings, terms = _gather(spills, first, stop)
            kept = position[postings["slot"]]
            mask = kept >= 0
            postings, terms, kept = postings[mask], terms[mask], kept[mask]
            by_term_then_doc = np.argsort((terms.astype(np.int64) - first) * max(len(order), 1) + kept)
            postings, terms = postings[by_term_then_doc], terms[by_term_then_doc]
            kept = kept[by_term_then_doc]
            frequency = per_term[first:stop][terms - first]
            data.append(self._scores(postings["tf"], lengths[kept], average_length, frequency, len(order)))
            indices.append(kept)
        data.close()
        indices.close()
        indptr = np.zeros(vocabulary + 1, dtype=np.int64)
        np.cumsum(per_term, out=indptr[1:])
        np.save(folder / "indptr.csc.index.npy", indptr)
        self._write_vocab_and_params(folder, len(order))
        return len(order)

    # --- steps -------------------------------------------------------------------------------

    def _spill(self) -> None:
        if not self._block_postings:
            return
        terms = np.concatenate(self._block_terms)
        postings = np.empty(len(terms), dtype=_POSTING)
        postings["tf"] = np.concatenate(self._block_counts)
        postings["slot"] = np.repeat(np.frombuffer(self._block_slots, dtype=np.int32), self._block_sizes)
        by_term = np.argsort(terms, kind="stable")  # stable: slots stay ascending within a term
        terms, postings = terms[by_term], postings[by_term]
        starts = np.flatnonzero(np.diff(terms)) + 1
        distinct = terms[np.append(0, starts)]
        bounds = np.concatenate([[0], starts, [len(terms)]]).astype(np.int64)
        stem = self.work / _SPILLS / f"{self._spills:06d}"
        postings.tofile(f"{stem}.postings")
        distinct.astype(np.int32).tofile(f"{stem}.terms")
        bounds.tofile(f"{stem}.bounds")
        self._spills += 1
        self._block_terms, self._block_counts = [], []
        self._block_slots, self._block_sizes = array("i"), array("i")
        self._block_postings = 0

    def _open_spill(self, number: int) -> _Spill:
        """A spill's term runs are memory-mapped: with one spill per block, held in memory they
        would grow with the corpus (measured: ~1 GB of 2M articles' 80 spills)."""
        stem = self.work / _SPILLS / f"{number:06d}"
        return _Spill(
            postings=Path(f"{stem}.postings"),
            terms=np.memmap(f"{stem}.terms", dtype=np.int32, mode="r"),  # never empty: see _spill
            bounds=np.memmap(f"{stem}.bounds", dtype=np.int64, mode="r"),
        )

    def _kept_postings_per_term(
        self, spills: list[_Spill], position: np.ndarray, vocabulary: int, *, dropped: bool
    ) -> np.ndarray:
        """Document frequency of every term over the kept documents (the output's column sizes)."""
        per_term = np.zeros(vocabulary, dtype=np.int64)
        for spill in spills:
            if not dropped:  # every posting is kept: the run lengths say it all
                per_term[spill.terms] += np.diff(spill.bounds)
                continue
            for first, stop in _term_ranges_of(spill, self.merge_postings):
                postings, terms = spill.runs(first, stop)
                kept = terms[position[postings["slot"]] >= 0] - first
                per_term[first:stop] += np.bincount(kept, minlength=stop - first)
        return per_term

    def _scores(
        self, tf: np.ndarray, length: np.ndarray, average_length: float, frequency: np.ndarray, documents: int
    ) -> np.ndarray:
        """BM25 ("lucene") of each posting, computed exactly as bm25s computes it."""
        k1, b = self.settings.k1, self.settings.b
        idf = np.log(1 + (documents - frequency + 0.5) / (frequency + 0.5)).astype(np.float32)
        tf = tf.astype(np.float32)
        tfc = tf / (k1 * ((1 - b) + b * length / average_length) + tf)
        return (idf * tfc).astype(np.float32)

    def _write_vocab_and_params(self, folder: Path, documents: int) -> None:
        # bm25s' empty token goes in for the dump only: no copy of what may be millions of entries.
        vocab, added = self._vocab, _EMPTY_TOKEN not in self._vocab
        vocab.default_factory = None
        if added:
            vocab[_EMPTY_TOKEN] = len(vocab)
        try:
            text = json.dumps(vocab, ensure_ascii=False)
        finally:
            if added:
                del vocab[_EMPTY_TOKEN]
            vocab.default_factory = vocab.__len__
        atomic_write_text(folder / "vocab.index.json", text)
        params = {
            "k1": self.settings.k1,
            "b": self.settings.b,
            "delta": 0.5,
            "method": "lucene",
            "idf_method": "lucene",
            "dtype": "float32",
            "int_dtype": "int32",
            "num_docs": documents,
            "version": bm25s.__version__,
            "backend": "numpy",
        }
        atomic_write_json(folder / "params.index.json", params)

    # --- resuming ----------------------------------------------------------------------------

    def _reopen(self, state: dict[str, Any]) -> None:
        if state.get("format") != _FORMAT or (state["k1"], state["b"]) != (self.settings.k1, self.settings.b):
            raise ValueError(f"{self.work}: a BM25 build of another format or settings cannot be resumed")
        vocab_path, lengths_path = self.work / _VOCAB, self.work / _LENGTHS
        with vocab_path.open("r+b") as handle:  # cut what was appended after the checkpoint
            handle.truncate(state["vocabulary_bytes"])
        with lengths_path.open("r+b") as handle:
            handle.truncate(state["documents"] * 4)
        tokens = vocab_path.read_text(encoding="utf-8").split("\n")[: state["vocabulary"]]
        self._vocab.update(zip(tokens, range(len(tokens))))
        self._lengths.frombytes(lengths_path.read_bytes())
        self._spills = state["spills"]
        self._saved_vocab, self._saved_docs = len(self._vocab), len(self._lengths)


def _term_ranges(per_term: np.ndarray, budget: int) -> Iterator[tuple[int, int]]:
    """Consecutive term ranges of at most ``budget`` postings each (a bigger term gets one alone)."""
    ends = np.cumsum(per_term)
    first, vocabulary = 0, len(per_term)
    while first < vocabulary:
        already = ends[first - 1] if first else 0
        stop = int(np.searchsorted(ends, already + budget, side="right"))
        stop = max(stop, first + 1)
        yield first, stop
        first = stop


def _term_ranges_of(spill: _Spill, budget: int) -> Iterator[tuple[int, int]]:
    """Term ranges that split one spill into reads of at most ``budget`` postings."""
    sizes = np.zeros(int(spill.terms[-1]) + 1, dtype=np.int64)
    sizes[spill.terms] = np.diff(spill.bounds)
    yield from _term_ranges(sizes, budget)


def _gather(spills: list[_Spill], first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    parts = [spill.runs(first, stop) for spill in spills]
    if not parts:
        return np.empty(0, dtype=_POSTING), np.empty(0, dtype=np.int32)
    return np.concatenate([p for p, _ in parts]), np.concatenate([t for _, t in parts])


class _NpyAppender:
    """A ``.npy`` file of known length filled front to back by plain writes."""

    def __init__(self, path: Path, dtype: type, length: int) -> None:
        self.dtype = np.dtype(dtype)
        self.handle = path.open("wb")
        descr = np.lib.format.dtype_to_descr(self.dtype)
        header = {"descr": descr, "fortran_order": False, "shape": (length,)}
        np.lib.format.write_array_header_1_0(self.handle, header)

    def append(self, values: np.ndarray) -> None:
        self.handle.write(np.ascontiguousarray(values, dtype=self.dtype).tobytes())

    def close(self) -> None:
        self.handle.close()
