"""Dense shards: sentence-transformers embeddings in a FAISS index per language, with an id map.

Why per language: the paper searches English and the item's language separately, a user fetches
only the languages they need, and a language is the natural unit of resumption. Within a language,
embeddings are checkpointed in parts (``checkpoint_every`` passages, one ``.npy`` each, written
atomically under the run's ``state/``), so a kill loses at most one part; the shard itself
(``index.faiss`` + ``ids.parquet``) is written once, atomically, when all parts exist.

Index type by size: exact inner-product search (``IndexFlatIP``) below ``ann_threshold`` vectors,
where brute force is fast and approximation would only cost recall; ``IndexHNSWFlat`` with inner
product above it (no training, so deterministic; parameters in ``builders/index.yaml``). The metric
is inner product, which is cosine similarity for normalised models.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from m4build.errors import InputFileError, UsageError
from m4build.retrieval.conventions import Conventions, conventions_for
from m4build.retrieval.manifest import sha256_file
from m4build.runs import atomic_write_bytes, atomic_write_parquet, atomic_write_with

Advance = Callable[[int], None]
PROGRESS_BATCHES = 8  # batches per progress update while embedding
_SNAPSHOT = re.compile(r"snapshots[/\\]([0-9a-f]{40})")


def _faiss():
    """FAISS, or an error naming the package to install."""
    try:
        import faiss
    except ImportError:
        raise UsageError("dense indexes need FAISS", "Install it with: pip install faiss-cpu") from None
    return faiss


def pick_device() -> str:
    """``cuda`` when a GPU is present (embedding is ~50x faster there), else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def local_revision(folder: Path) -> str:
    """A content hash of a local model folder: the same weights give the same revision on any machine."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8"))
        digest.update(sha256_file(path).encode("ascii"))
    return f"sha256:{digest.hexdigest()}"


def hub_revision(model: str) -> str:
    """The commit of a Hub model in the local HF cache, or ``unknown`` when it cannot be told."""
    try:
        from huggingface_hub import snapshot_download

        match = _SNAPSHOT.search(snapshot_download(model, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure only means the revision is not known
        return "unknown"
    return match.group(1) if match else "unknown"


def model_revision(model: str) -> str:
    return local_revision(Path(model)) if Path(model).is_dir() else hub_revision(model)


@dataclass
class Embedder:
    """A sentence-transformers model with its family's conventions applied on both sides."""

    model_id: str
    model: Any  # sentence_transformers.SentenceTransformer
    conventions: Conventions
    revision: str
    device: str

    @property
    def tokenizer(self) -> Any:
        return self.model.tokenizer

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    def _encode(self, texts: Sequence[str], prefix: str, batch_size: int) -> np.ndarray:
        vectors = self.model.encode(
            [prefix + text for text in texts],
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=self.conventions.normalize,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_passages(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        return self._encode(texts, self.conventions.passage_prefix, batch_size)

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        return self._encode(texts, self.conventions.query_prefix, batch_size)

    def describe(self, slug: str) -> dict[str, Any]:
        """The manifest's ``dense`` section: everything a searcher needs to query this index right."""
        return {
            "model": self.model_id,
            "revision": self.revision,
            "dimension": self.dimension,
            "metric": "ip",
            "normalize": self.conventions.normalize,
            "query_prefix": self.conventions.query_prefix,
            "passage_prefix": self.conventions.passage_prefix,
            "family": self.conventions.family,
            "conventions_source": self.conventions.source,
            "max_seq_length": self.max_seq_length,
            "model_slug": slug,
        }


def load_model(model: str, device: str | None = None) -> Any:
    """A SentenceTransformer for ``model`` (Hub id or local path) on the best device, fp16 on a GPU."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise UsageError(
            "dense indexes need sentence-transformers", "Install it with: pip install sentence-transformers"
        ) from None
    device = device or pick_device()
    try:
        st_model = SentenceTransformer(model, device=device)
    except Exception as exc:  # noqa: BLE001 - loading fails in many library-specific ways
        raise UsageError(
            f"could not load the embedding model {model!r}: {type(exc).__name__}: {exc}",
            "Pass a local sentence-transformers folder, or a Hub id that is in the HF cache "
            "(these machines are offline).",
        ) from None
    if device == "cuda":
        st_model.half()
    return st_model


def load_embedder(model: str, overrides: dict[str, Any] | None = None, device: str | None = None) -> Embedder:
    """An embedder for building: conventions from the recipe, the model and the family table."""
    st_model = load_model(model, device)
    conventions = conventions_for(model, overrides, getattr(st_model, "prompts", None))
    return Embedder(model, st_model, conventions, model_revision(model), str(st_model.device))


def embed_in_parts(
    embedder: Embedder,
    texts: Sequence[str],
    parts_dir: Path,
    *,
    part_size: int,
    batch_size: int,
    advance: Advance,
) -> np.ndarray:
    """All passage vectors, reusing the finished parts in ``parts_dir`` and writing each new one atomically."""
    vectors = []
    for number, start in enumerate(range(0, len(texts), part_size)):
        chunk = texts[start : start + part_size]
        path = parts_dir / f"part-{number:05d}-{len(chunk)}.npy"
        if path.is_file():
            part = np.load(path)
            advance(len(chunk))
        else:
            part = _encode_with_progress(embedder, chunk, batch_size, advance)
            atomic_write_bytes(path, _npy_bytes(part))
        vectors.append(part)
    if not vectors:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    return np.concatenate(vectors)


def _encode_with_progress(
    embedder: Embedder, texts: Sequence[str], batch_size: int, advance: Advance
) -> np.ndarray:
    """Encode in blocks of ``PROGRESS_BATCHES`` batches so the bar moves every few seconds, not once a part.

    Blocks stay large enough for sentence-transformers' length sorting to keep batches dense.
    """
    block = batch_size * PROGRESS_BATCHES
    pieces = []
    for start in range(0, len(texts), block):
        pieces.append(embedder.encode_passages(texts[start : start + block], batch_size))
        advance(len(pieces[-1]))
    return np.concatenate(pieces)


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


@dataclass(frozen=True)
class AnnSettings:
    """When and how to build an approximate index (see ``builders/index.yaml`` for the reasons)."""

    threshold: int = 200_000
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128

    @classmethod
    def from_recipe(cls, dense: dict[str, Any]) -> AnnSettings:
        hnsw = dense.get("hnsw", {})
        return cls(
            threshold=int(dense["ann_threshold"]),
            hnsw_m=int(hnsw.get("M", cls.hnsw_m)),
            ef_construction=int(hnsw.get("ef_construction", cls.ef_construction)),
            ef_search=int(hnsw.get("ef_search", cls.ef_search)),
        )


def build_faiss(vectors: np.ndarray, ann: AnnSettings) -> tuple[Any, str]:
    """A FAISS index over ``vectors`` and its type name: ``flat`` below the threshold, ``hnsw`` from it."""
    faiss = _faiss()
    dimension = vectors.shape[1]
    if len(vectors) < ann.threshold:
        index, kind = faiss.IndexFlatIP(dimension), "flat"
    else:
        index = faiss.IndexHNSWFlat(dimension, ann.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ann.ef_construction
        index.hnsw.efSearch = ann.ef_search
        kind = "hnsw"
    index.add(vectors)
    return index, kind


def write_dense_shard(folder: Path, vectors: np.ndarray, ids: Sequence[str], ann: AnnSettings) -> str:
    """Write ``index.faiss`` and ``ids.parquet`` (row i of the index is passage ``ids[i]``); returns the type."""
    faiss = _faiss()
    index, kind = build_faiss(vectors, ann)
    atomic_write_parquet(folder / "ids.parquet", pa.table({"id": pa.array(list(ids), pa.string())}))
    atomic_write_with(folder / "index.faiss", lambda tmp: faiss.write_index(index, tmp))
    return kind


def read_faiss(path: Path, ef_search: int | None) -> Any:
    """Load a shard; HNSW gets the manifest's ``efSearch`` (the recall/speed point it was built for)."""
    faiss = _faiss()
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as exc:
        raise InputFileError(
            f"the dense shard {path} cannot be read by FAISS ({str(exc).splitlines()[0]})",
            "Download the index again, or rebuild it with `m4build index RUN`.",
        ) from None
    if ef_search is not None and hasattr(index, "hnsw"):
        index.hnsw.efSearch = ef_search
    return index
