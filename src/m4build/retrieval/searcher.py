"""Search a built index: ``load_index(folder, lang)`` and ``Searcher.search(queries, k, mode)``.

A searcher serves one language, as the paper searches English and the item's language separately:
load one per language and query each. It verifies the checksums of exactly the files it loads
against the manifest, embeds queries with the index's own model and recorded conventions (query
prefix, normalisation), and refuses a different model, since vectors of two models live in
unrelated spaces and the scores would look plausible while meaning nothing.

Modes: ``dense`` (FAISS), ``bm25`` (bm25s) and ``hybrid`` (reciprocal-rank fusion of both, see
``m4build.retrieval.fusion``). The default is ``hybrid`` when the index has both sides, else the one
it has.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from m4build.errors import UsageError
from m4build.retrieval.bm25 import Bm25Shard
from m4build.retrieval.conventions import Conventions
from m4build.retrieval.dense import Embedder, load_model, model_revision, read_faiss
from m4build.retrieval.fusion import RRF_K, ordered, reciprocal_rank_fusion, top_k_scores
from m4build.retrieval.manifest import (
    MANIFEST,
    bm25_dir,
    dense_dir,
    entries_under,
    passages_path,
    read_manifest,
    verify_files,
)

Mode = Literal["dense", "bm25", "hybrid"]
MODES: tuple[str, ...] = ("dense", "bm25", "hybrid")
FUSION_DEPTH = 100  # hits taken from each side before fusing (recipe: search.fusion_depth)
_TIE_MARGIN = 16  # extra dense hits fetched so that ties at the cut-off are broken by id


@dataclass(frozen=True)
class Hit:
    """One retrieved passage, with where it comes from."""

    id: str
    score: float
    rank: int
    text: str
    title: str
    section_path: list[str] = field(default_factory=list)
    wiki: str = ""
    language: str = ""
    page_id: int = 0
    revision_id: int = 0
    section_index: int = 0
    chunk: int = 0


def locate_index(index: str | Path) -> Path:
    """The local folder holding ``indexes/manifest.json`` for ``index``.

    Only local folders (a run folder after ``m4build index``, or a pushed repo folder) are handled
    here; ``m4build.hub`` extends this to Hub repo ids.
    """
    folder = Path(index)
    if (folder / MANIFEST).is_file():
        return folder
    if folder.is_dir():
        raise UsageError(
            f"{folder} has no index ({MANIFEST} is missing)", f"Build one with: m4build index {folder}"
        )
    raise UsageError(
        f"index not found: {index!r} is not a local folder",
        "Pass a run folder after `m4build index`, or a folder written by `m4build push`.",
    )


def load_index(folder: str | Path, lang: str, *, model: str | None = None, verify: bool = True) -> Searcher:
    """A searcher over one language of the index in ``folder``.

    ``model``: the embedding model to query with; None uses the one the index was built with. A
    different model is refused unless it is the same weights (same id, or same content revision).
    ``verify``: check the sha256 of every file loaded against the manifest (on by default).
    """
    root = locate_index(folder)
    manifest = read_manifest(root)
    language = _language_entry(root, manifest, lang)
    files = language["files"]
    dense = manifest.get("dense")
    dense_files = entries_under(files, dense_dir(dense["model_slug"], lang)) if dense else []
    bm25_files = entries_under(files, bm25_dir(lang))
    passage_files = [entry for entry in files if entry["path"] == passages_path(lang)]
    if verify:
        verify_files(root, [*passage_files, *dense_files, *bm25_files])
    if dense_files:
        _check_model(root, dense, model)
    return Searcher(
        root=root,
        lang=lang,
        manifest=manifest,
        dense_model=(model or dense["model"]) if dense_files else None,
        has_bm25=bool(bm25_files),
    )


def _language_entry(root: Path, manifest: dict[str, Any], lang: str) -> dict[str, Any]:
    languages = manifest.get("languages", {})
    if lang not in languages:
        raise UsageError(
            f"the index in {root} has no language {lang!r}",
            f"Available languages: {', '.join(sorted(languages)) or 'none'}.",
        )
    return languages[lang]


def _check_model(root: Path, dense: dict[str, Any], model: str | None) -> None:
    """Refuse a query model other than the index's, unless it is the same weights under another name."""
    if model is None or model == dense["model"]:
        return
    revision = model_revision(model)
    if revision != "unknown" and revision == dense["revision"]:
        return
    raise UsageError(
        f"the index in {root} was built with {dense['model']!r} (revision {dense['revision']}); "
        f"querying it with {model!r} (revision {revision}) would compare vectors of different models",
        f"Omit the model to query with {dense['model']!r}, or rebuild the index with: "
        f"m4build index RUN --model {model}",
    )


class Searcher:
    """Dense, BM25 and hybrid search over one language of an index."""

    def __init__(
        self, *, root: Path, lang: str, manifest: dict[str, Any], dense_model: str | None, has_bm25: bool
    ):
        self.root = root
        self.lang = lang
        self.manifest = manifest
        # Passages stay columnar (Arrow); only the rows of returned hits become Python objects.
        self._passages = pq.read_table(root / passages_path(lang))
        self._row_of = {passage: row for row, passage in enumerate(self._passages.column("id").to_pylist())}
        search = manifest.get("build", {}).get("search", {})
        self._rrf_k = int(search.get("rrf_k", RRF_K))
        self._fusion_depth = int(search.get("fusion_depth", FUSION_DEPTH))
        self._dense_model = dense_model
        self._embedder: Embedder | None = None
        self._faiss: Any = None
        self._dense_ids: list[str] = []
        self._bm25: Bm25Shard | None = None
        self._bm25_ids: list[str] = []
        if has_bm25:
            folder = root / bm25_dir(lang)
            self._bm25 = Bm25Shard(folder)
            self._bm25_ids = pq.read_table(folder / "ids.parquet").column("id").to_pylist()
        if dense_model is not None:
            self._load_dense_shard()

    # -- what is here ---------------------------------------------------------------------------
    @property
    def modes(self) -> list[str]:
        """The modes this index supports."""
        have = {"dense": self._dense_model is not None, "bm25": self._bm25 is not None}
        have["hybrid"] = have["dense"] and have["bm25"]
        return [mode for mode in MODES if have[mode]]

    @property
    def default_mode(self) -> str:
        return "hybrid" if "hybrid" in self.modes else self.modes[0]

    def __len__(self) -> int:
        return self._passages.num_rows

    # -- search ---------------------------------------------------------------------------------
    def search(self, queries: str | Sequence[str], k: int = 5, mode: Mode | None = None) -> list[list[Hit]]:
        """The top ``k`` passages for each query (a single string counts as one query), best first."""
        texts = [queries] if isinstance(queries, str) else list(queries)
        if k < 1:
            raise UsageError(f"k must be at least 1, not {k}", "Ask for k >= 1 hits per query.")
        mode = mode or self.default_mode
        if mode not in self.modes:
            raise UsageError(
                f"mode {mode!r} is not available for this index",
                f"Available modes: {', '.join(self.modes)}.",
            )
        if not texts:
            return []
        if mode == "dense":
            ranked = self._dense(texts, k)
        elif mode == "bm25":
            ranked = [self._bm25_one(text, k) for text in texts]
        else:
            ranked = self._hybrid(texts, k)
        return [self._hits(pairs) for pairs in ranked]

    def _dense(self, texts: list[str], k: int) -> list[list[tuple[str, float]]]:
        vectors = self._query_embedder().encode_queries(texts)
        fetch = min(self._faiss.ntotal, k + _TIE_MARGIN)
        scores, rows = self._faiss.search(vectors, fetch)
        return [
            ordered(
                [
                    (self._dense_ids[row], float(score))
                    for score, row in zip(line_scores, line_rows)
                    if row >= 0
                ],
                k,
            )
            for line_scores, line_rows in zip(scores, rows)
        ]

    def _bm25_one(self, text: str, k: int) -> list[tuple[str, float]]:
        return top_k_scores(self._bm25.scores(text), self._bm25_ids, k, positive_only=True)

    def _hybrid(self, texts: list[str], k: int) -> list[list[tuple[str, float]]]:
        depth = max(k, self._fusion_depth)
        dense = self._dense(texts, depth)
        return [
            reciprocal_rank_fusion(
                [[i for i, _ in dense_pairs], [i for i, _ in self._bm25_one(text, depth)]], k, self._rrf_k
            )
            for text, dense_pairs in zip(texts, dense)
        ]

    def _hits(self, pairs: list[tuple[str, float]]) -> list[Hit]:
        return passage_hits(self._passages, self._row_of, pairs)

    # -- loading --------------------------------------------------------------------------------
    def _load_dense_shard(self) -> None:
        dense = self.manifest["dense"]
        folder = self.root / dense_dir(dense["model_slug"], self.lang)
        ef_search = self.manifest.get("build", {}).get("hnsw", {}).get("ef_search")
        self._faiss = read_faiss(folder / "index.faiss", ef_search)
        self._dense_ids = pq.read_table(folder / "ids.parquet").column("id").to_pylist()

    def _query_embedder(self) -> Embedder:
        """The index's model with the conventions recorded at build time (loaded on first dense query)."""
        if self._embedder is None:
            dense = self.manifest["dense"]
            conventions = Conventions(
                family=dense.get("family", "unknown"),
                query_prefix=dense["query_prefix"],
                passage_prefix=dense["passage_prefix"],
                normalize=bool(dense["normalize"]),
                source="manifest",
            )
            st_model = _shared_model(self._dense_model)
            self._embedder = Embedder(
                self._dense_model, st_model, conventions, dense["revision"], str(st_model.device)
            )
        return self._embedder


@functools.lru_cache(maxsize=4)
def _shared_model(model: str) -> Any:
    """One loaded query model per process, whatever the number of language searchers using it
    (an evaluation opens the English shard and each item language's shard)."""
    return load_model(model)


def passage_hits(
    passages: pa.Table, row_of: Mapping[str, int], pairs: Sequence[tuple[str, float]]
) -> list[Hit]:
    """Ranked ``(id, score)`` pairs as hits, ranks from 1, with each passage's text and provenance.

    ``row_of`` maps a passage id to its row in ``passages``; only the returned rows leave Arrow.
    """
    rows = passages.take([row_of[passage] for passage, _ in pairs]).to_pylist()
    return [
        Hit(
            id=passage,
            score=score,
            rank=rank,
            text=row["text"],
            title=row["title"],
            section_path=list(row["section_path"] or []),
            wiki=row["wiki"],
            language=row["language"],
            page_id=row["page_id"],
            revision_id=row["revision_id"],
            section_index=row["section_index"],
            chunk=row["chunk"],
        )
        for rank, ((passage, score), row) in enumerate(zip(pairs, rows), start=1)
    ]
