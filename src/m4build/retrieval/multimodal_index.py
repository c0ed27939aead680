"""Multimodal passage shards for ``mm-rag``: the text index's passages embedded by a dual encoder.

A multimodal shard reuses the passages ``m4build index`` cut for a language (the same ids, the same
``embed_text``), so text and multimodal retrieval rank the same units and their hits can be compared
or fused. Layout, beside the text index (``m4build.retrieval.manifest``)::

    indexes/multimodal/{model_slug}/{lang}/index.faiss + ids.parquet + manifest.json

The shard's own ``manifest.json`` records the encoder (model, revision, dimension, text window),
the query combination rule, the passages file it was built from (path, SHA-256, count, how many were
cut to the text window), the ANN settings, and every file with its SHA-256. A build whose manifest
still matches (same encoder, same passages, same ANN settings, files intact) is reused without
embedding anything; a changed query combination only rewrites the manifest, since passage vectors
do not depend on it. Embeddings are checkpointed in parts under the run's ``state/`` (the dense
builder's ``embed_in_parts``), so a killed build loses at most one part, and the shard folder is
swapped in whole (``replace_dir``), so it is never seen half-written.

Searching refuses a shard whose passages changed since it was built, and a query model other than
the shard's (vectors of two models live in unrelated spaces) unless it is the same weights; it also
refuses the shard's own model path when the weights there changed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from m4build import __version__
from m4build.errors import InputFileError, UsageError
from m4build.progress import NullProgress, ProgressReporter
from m4build.retrieval.chunking import embed_texts
from m4build.retrieval.dense import AnnSettings, embed_in_parts, model_revision, read_faiss, write_dense_shard
from m4build.retrieval.fusion import ordered
from m4build.retrieval.manifest import (
    INDEXES,
    clean_leftovers,
    file_entry,
    files_match,
    model_slug,
    passages_path,
    read_manifest,
    replace_dir,
    sha256_file,
    verify_files,
)
from m4build.retrieval.multimodal import MultimodalEncoder, QueryCombination, load_multimodal_encoder
from m4build.retrieval.searcher import Hit, locate_index, passage_hits
from m4build.runs import RunFolder, atomic_write_json, package_versions, stable_hash, utc_now

FORMAT = "m4build-mm-index/1"
MULTIMODAL = f"{INDEXES}/multimodal"
SHARD_MANIFEST = "manifest.json"
PACKAGES = ("m4build", "transformers", "torch", "faiss-cpu", "pillow", "pyarrow")
PASSAGE_TEXT = "embed_text(title, section_path, text) (m4build.retrieval.chunking), cut to max_text_tokens"
TIE_MARGIN = 16  # hits fetched beyond k at first, so that ties at the cut-off are usually seen at once


def multimodal_dir(slug: str, lang: str) -> str:
    return f"{MULTIMODAL}/{slug}/{lang}"


@dataclass(frozen=True)
class MultimodalBuild:
    """What :func:`build_multimodal_index` left: the shard folder, its manifest, and whether it was reused."""

    folder: Path
    manifest: dict[str, Any]
    reused: bool


# -- building -----------------------------------------------------------------------------------------


def build_multimodal_index(
    index: str | Path,
    lang: str,
    encoder: MultimodalEncoder,
    *,
    batch_size: int = 32,
    part_size: int = 4096,
    ann: AnnSettings | None = None,
    progress: ProgressReporter | None = None,
) -> MultimodalBuild:
    """Build (or resume, or reuse) the multimodal shard of ``lang`` over an index folder's passages.

    ``index``: a folder after ``m4build index`` (its ``indexes/passages/{lang}`` are embedded).
    ``part_size``: passages per checkpointed part; ``ann``: exact below its threshold, HNSW above.
    """
    if batch_size < 1 or part_size < 1:
        raise UsageError(
            f"batch_size and part_size must be at least 1 (got {batch_size} and {part_size})",
            "Pass positive sizes.",
        )
    root = locate_index(index)
    ann = ann or AnnSettings()
    passages_file = _passages_file(root, lang)
    folder = root / multimodal_dir(model_slug(encoder.model_id), lang)
    clean_leftovers(root / MULTIMODAL)
    clean_leftovers(RunFolder(root).step_dir("index") / "multimodal")
    fresh = {
        "format": FORMAT,
        "language": lang,
        "encoder": encoder.describe(),
        "queries": encoder.combination.describe(),
        "passages": {"path": passages_file["path"], "sha256": passages_file["sha256"]},
        "ann": _ann_description(ann),
    }
    old = _existing_manifest(folder)
    if old is not None and _key(old) == _key(fresh) and files_match(folder, old.get("files", [])):
        if old["queries"] != fresh["queries"]:
            old["queries"] = fresh["queries"]
            atomic_write_json(folder / SHARD_MANIFEST, old)
        return MultimodalBuild(folder, old, reused=True)

    passages = pq.read_table(root / passages_file["path"])
    texts = embed_texts(passages)
    parts_key = f"{folder.parent.name}-{_parts_key(fresh, part_size)}"
    parts = RunFolder(root).step_dir("index") / "multimodal" / parts_key / lang
    with (progress or NullProgress()).task(f"multimodal embed {lang}", total=len(texts)) as advance:
        vectors = embed_in_parts(
            encoder, texts, parts, part_size=part_size, batch_size=batch_size, advance=advance
        )
    manifest = {
        **fresh,
        "passages": {
            **fresh["passages"],
            "count": len(texts),
            "truncated": encoder.count_truncated(texts),
            "text": PASSAGE_TEXT,
        },
        "build": {
            "device": encoder.device,
            "batch_size": batch_size,
            "part_size": part_size,
            "built_at": utc_now(),
            "m4build_version": __version__,
            "versions": package_versions(PACKAGES),
        },
    }
    ids = passages.column("id").to_pylist()

    def fill(staging: Path) -> None:
        kind = write_dense_shard(staging, vectors, ids, ann)
        manifest["files"] = [
            file_entry(staging, "index.faiss", "multimodal", vectors=len(vectors), index_type=kind),
            file_entry(staging, "ids.parquet", "ids", rows=len(ids)),
        ]
        atomic_write_json(staging / SHARD_MANIFEST, manifest)

    replace_dir(folder, fill)
    shutil.rmtree(parts, ignore_errors=True)  # the shard now holds these vectors
    return MultimodalBuild(folder, manifest, reused=False)


def _passages_file(root: Path, lang: str) -> dict[str, Any]:
    """The text index's passages entry for ``lang``, checked against its checksum."""
    languages = read_manifest(root).get("languages", {})
    entry = next(
        (item for item in languages.get(lang, {}).get("files", []) if item["path"] == passages_path(lang)),
        None,
    )
    if entry is None:
        raise UsageError(
            f"the index in {root} has no passages for language {lang!r}",
            f"Languages with passages: {', '.join(sorted(languages)) or 'none'}; "
            f"cut them first with: m4build index {root} --lang {lang}",
        )
    verify_files(root, [entry])
    return entry


def _ann_description(ann: AnnSettings) -> dict[str, Any]:
    return {
        "threshold": ann.threshold,
        "hnsw": {"M": ann.hnsw_m, "ef_construction": ann.ef_construction, "ef_search": ann.ef_search},
    }


def _key(manifest: dict[str, Any]) -> Any:
    """What the passage vectors and the shard depend on; the query combination is left out on purpose."""
    return [
        manifest.get("format"),
        manifest.get("encoder"),
        manifest.get("passages", {}).get("sha256"),
        manifest.get("ann"),
    ]


def _parts_key(manifest: dict[str, Any], part_size: int) -> str:
    """Parts belong to one encoder, one passages file and one part size (part boundaries move with it)."""
    return stable_hash([manifest["encoder"], manifest["passages"]["sha256"], part_size], length=12)


def _existing_manifest(folder: Path) -> dict[str, Any] | None:
    """The shard's manifest, or None when there is none or it cannot be read (the shard is then rebuilt)."""
    try:
        return json.loads((folder / SHARD_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


# -- searching -----------------------------------------------------------------------------------------


def load_multimodal_index(
    index: str | Path,
    lang: str,
    *,
    model: str | None = None,
    encoder: MultimodalEncoder | None = None,
    verify: bool = True,
) -> MultimodalSearcher:
    """A searcher over the multimodal shard of ``lang`` in ``index``.

    ``model``: the encoder to query with (a Hub id or local path); None uses the one the shard was built
    with, loaded on the first search with the recorded query combination. ``encoder``: an encoder
    already loaded (e.g. shared by the English and item-language searchers); its own combination is
    used. ``verify``: check the shard's files and its passages against their SHA-256 (on by default).
    """
    if encoder is not None and model is not None and model != encoder.model_id:
        raise UsageError(
            f"model {model!r} and encoder {encoder.model_id!r} disagree", "Pass one of the two, not both."
        )
    root = locate_index(index)
    query_model = encoder.model_id if encoder is not None else model
    folder, manifest = _pick_shard(root, lang, query_model)
    if verify:
        verify_files(folder, manifest["files"])
        _check_passages(root, manifest)
    recorded = manifest["encoder"]
    query_model = query_model or recorded["model"]
    revision = encoder.revision if encoder is not None else model_revision(query_model)
    _check_model(folder, recorded, query_model, revision)
    return MultimodalSearcher(root, folder, manifest, model=query_model, encoder=encoder)


def _read_shard_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputFileError(
            f"cannot read the multimodal index manifest {path} ({exc})",
            "Rebuild the multimodal index (build_multimodal_index).",
        ) from None
    if manifest.get("format") != FORMAT:
        raise InputFileError(
            f"{path} has format {manifest.get('format')!r}; this m4build reads {FORMAT!r}",
            "Rebuild the multimodal index with this version of m4build, or upgrade m4build.",
        )
    return manifest


def _pick_shard(root: Path, lang: str, model: str | None) -> tuple[Path, dict[str, Any]]:
    """The shard of ``lang`` built with ``model`` (or the only one when no model is named)."""
    shards = {
        path.parent: _read_shard_manifest(path)
        for path in sorted((root / MULTIMODAL).glob(f"*/{lang}/{SHARD_MANIFEST}"))
    }
    if not shards:
        raise UsageError(
            f"the index in {root} has no multimodal shard for language {lang!r}",
            "Build one with m4build.retrieval.multimodal_index.build_multimodal_index.",
        )
    built_with = ", ".join(sorted(manifest["encoder"]["model"] for manifest in shards.values()))
    if model is not None:
        same = [item for item in shards.items() if item[1]["encoder"]["model"] == model]
        if same:
            return same[0]
    if len(shards) == 1:
        return next(iter(shards.items()))  # another model is judged (and refused) by _check_model
    if model is None:
        raise UsageError(
            f"the index in {root} has multimodal shards for {lang!r} from several models: {built_with}",
            "Pass model= (or encoder=) to choose one.",
        )
    revision = model_revision(model)  # the same weights under another name or path
    same = [item for item in shards.items() if revision == item[1]["encoder"]["revision"] != "unknown"]
    if same:
        return same[0]
    raise UsageError(
        f"no multimodal shard for {lang!r} in {root} was built with {model!r}",
        f"Shards exist for: {built_with}. Query with one of them, or build one for {model!r}.",
    )


def _check_passages(root: Path, manifest: dict[str, Any]) -> None:
    """Refuse a shard whose passages were re-cut after it was built: its rows would name the wrong text."""
    path = root / manifest["passages"]["path"]
    if not path.is_file() or sha256_file(path) != manifest["passages"]["sha256"]:
        raise InputFileError(
            f"the passages {path} changed (or are missing) since the multimodal index for "
            f"{manifest['language']!r} was built",
            "Rebuild the multimodal index (build_multimodal_index reuses nothing stale).",
        )


def _check_model(folder: Path, recorded: dict[str, Any], model: str, revision: str) -> None:
    """Refuse other weights than the shard's: another model, or the shard's own path with changed files."""
    known = "unknown" not in (revision, recorded["revision"])
    if known and revision == recorded["revision"]:
        return
    if model == recorded["model"] and not known:
        return
    if model == recorded["model"]:
        problem = (
            f"the model at {model!r} changed since the multimodal index in {folder} was built "
            f"(revision {recorded['revision']} then, {revision} now)"
        )
    else:
        problem = (
            f"the multimodal index in {folder} was built with {recorded['model']!r} (revision "
            f"{recorded['revision']}); querying it with {model!r} (revision {revision}) would compare "
            "vectors of different models"
        )
    raise UsageError(
        problem,
        f"Query with the weights the index was built with, or rebuild it with build_multimodal_index "
        f"and an encoder for {model!r}.",
    )


class MultimodalSearcher:
    """Top-k passages for (image, question) queries over one language's multimodal shard."""

    def __init__(
        self,
        root: Path,
        folder: Path,
        manifest: dict[str, Any],
        *,
        model: str,
        encoder: MultimodalEncoder | None = None,
    ):
        self.root = root
        self.folder = folder
        self.manifest = manifest
        self.lang = manifest["language"]
        self.model = model
        self._encoder = encoder
        self._recorded = QueryCombination.from_description(manifest["queries"])
        # Passages stay columnar (Arrow); only the rows of returned hits become Python objects.
        self._passages = pq.read_table(root / manifest["passages"]["path"])
        self._row_of = {passage: row for row, passage in enumerate(self._passages.column("id").to_pylist())}
        self._faiss = read_faiss(folder / "index.faiss", manifest["ann"]["hnsw"]["ef_search"])
        self._ids = pq.read_table(folder / "ids.parquet").column("id").to_pylist()

    @property
    def encoder(self) -> MultimodalEncoder:
        """The query encoder: the one given, or ``model`` loaded on first use with the recorded rule."""
        if self._encoder is None:
            self._encoder = load_multimodal_encoder(self.model, combination=self._recorded)
        return self._encoder

    @property
    def combination(self) -> QueryCombination:
        """The rule that turns an image and a question into one query vector."""
        return self._encoder.combination if self._encoder is not None else self._recorded

    def __len__(self) -> int:
        return self._passages.num_rows

    def search(
        self,
        images: Sequence[bytes],
        questions: Sequence[str],
        k: int = 5,
        *,
        names: Sequence[str] | None = None,
    ) -> list[list[Hit]]:
        """The top ``k`` passages for each (image, question) pair, best first, ties broken by passage id.

        ``images`` are encoded image bytes; ``names`` (e.g. item ids) label items in error messages.
        """
        if k < 1:
            raise UsageError(f"k must be at least 1, not {k}", "Ask for k >= 1 hits per query.")
        vectors = self.encoder.encode_queries(images, questions, names=names)
        return [passage_hits(self._passages, self._row_of, pairs) for pairs in self._ranked(vectors, k)]

    def _ranked(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """Top ``k`` ``(id, score)`` per query, fetching deeper while a tie at the cut-off runs past the fetch."""
        total = self._faiss.ntotal
        if total == 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        fetch = min(total, k + TIE_MARGIN)
        while True:
            scores, rows = self._faiss.search(vectors, fetch)
            cut = min(k, fetch) - 1
            if fetch == total or not np.any(scores[:, cut] == scores[:, -1]):
                break
            fetch = min(total, fetch * 2)
        return [
            ordered(
                [(self._ids[row], float(score)) for score, row in zip(line_scores, line_rows) if row >= 0], k
            )
            for line_scores, line_rows in zip(scores, rows)
        ]
