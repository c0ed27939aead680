"""The index pipeline: corpus sections -> passages -> dense and BM25 shards per language -> manifest.

Steps, per language: ``chunk`` (passages.parquet), ``embed`` (dense shard), ``bm25`` (BM25 shard);
then the manifest. The manifest is rewritten after every finished shard, and a shard whose files
still match their manifest entry is never redone, so a killed run resumes where it stopped; inside
a language, embeddings are checkpointed in parts (``m4build.retrieval.dense``).

What makes a shard stale: a change of the language's corpus files (its passages and both shards),
of the chunking (every language: passage ids and texts change), of the dense model or its
conventions or ANN settings (dense shards), of the BM25 parameters (BM25 shards). Stale entries are
dropped from the manifest and rebuilt; languages not asked for this time keep their valid shards.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from m4build import __version__
from m4build.errors import InputFileError, UsageError
from m4build.progress import NullProgress, ProgressReporter
from m4build.retrieval.bm25 import Bm25Settings, write_bm25_shard
from m4build.retrieval.chunking import Chunker, ChunkSettings, embed_texts, passages_table
from m4build.retrieval.dense import AnnSettings, Embedder, embed_in_parts, load_embedder, write_dense_shard
from m4build.retrieval.manifest import (
    FORMAT,
    INDEXES,
    MANIFEST,
    bm25_dir,
    clean_leftovers,
    dense_dir,
    entries_under,
    file_entry,
    files_match,
    model_slug,
    passages_path,
    read_manifest,
    sha256_file,
    write_manifest,
)
from m4build.runs import RunFolder, atomic_write_parquet, package_versions, stable_hash, utc_now

CORPUS_DIR = "data/corpus"
SECTION_COLUMNS = [
    "wiki",
    "language",
    "page_id",
    "revision_id",
    "section_index",
    "title",
    "section_path",
    "text",
]
PACKAGES = ("m4build", "sentence-transformers", "transformers", "torch", "faiss-cpu", "bm25s", "pyarrow")


@dataclass
class IndexJob:
    """One ``m4build index`` invocation: the run folder, the effective recipe and what to build."""

    run: Path
    recipe: dict[str, Any]
    languages: Sequence[str] | None = None  # None: every language of the corpus
    dense: bool = True
    bm25: bool = True


@dataclass
class IndexResult:
    root: Path
    manifest: dict[str, Any]
    built: dict[str, list[str]] = field(default_factory=dict)  # step -> languages built this time
    reused: dict[str, list[str]] = field(default_factory=dict)  # step -> languages already finished


# -- the corpus -------------------------------------------------------------------------------------


def corpus_files(run: Path) -> dict[str, list[Path]]:
    """Corpus parquet files per language; a clear error when the folder holds no corpus."""
    folder = run / CORPUS_DIR
    found = {
        lang.name: sorted(lang.glob("*.parquet"))
        for lang in sorted(folder.iterdir() if folder.is_dir() else [])
        if lang.is_dir() and any(lang.glob("*.parquet"))
    }
    if not found:
        raise InputFileError(
            f"{run} has no corpus ({CORPUS_DIR}/<lang>/*.parquet not found)",
            f"Build one first, e.g.: m4build corpus worldcuisines --source sample --out {run}",
        )
    return found


def select_languages(available: Sequence[str], wanted: Sequence[str] | None) -> list[str]:
    if not wanted:
        return sorted(available)
    unknown = sorted(set(wanted) - set(available))
    if unknown:
        raise UsageError(
            f"the corpus has no language {', '.join(unknown)}",
            f"Languages in this corpus: {', '.join(sorted(available))}.",
        )
    return sorted(set(wanted))


def read_sections(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The section columns chunking needs; a missing column or an unreadable file is named."""
    tables = []
    for path in paths:
        try:
            missing = [column for column in SECTION_COLUMNS if column not in pq.read_schema(path).names]
            if not missing:
                tables.append(pq.read_table(path, columns=SECTION_COLUMNS))
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputFileError(
                f"cannot read the corpus file {path}: {exc}",
                "Rebuild the corpus with m4build corpus (the same --out resumes it).",
            ) from None
        if missing:
            raise InputFileError(
                f"the corpus file {path} lacks the column(s) {', '.join(missing)}",
                "Index a corpus written by m4build corpus, or add the columns to the file.",
            )
    return pa.concat_tables(tables).to_pylist()


def corpus_fingerprint(run: Path, paths: Sequence[Path]) -> str:
    """One hash over a language's corpus files: any change of its sections makes its shards stale."""
    return stable_hash([[path.relative_to(run).as_posix(), sha256_file(path)] for path in paths], length=64)


# -- the manifest -----------------------------------------------------------------------------------


def chunking_settings(recipe: dict[str, Any], embedder: Embedder) -> dict[str, Any]:
    chunking = recipe["chunking"]
    return {
        "size": int(chunking["size"]),
        "overlap": int(chunking["overlap"]),
        "unit": "tokens",
        "tokenizer": embedder.model_id,
        "tokenizer_revision": embedder.revision,
        "max_seq_length": embedder.max_seq_length,
        "passage_prefix": embedder.conventions.passage_prefix,
        "embed_text": "{title} > {section path joined by ' > '}\\n{text} (m4build.retrieval.chunking.embed_text)",
        "id": "{wiki}:{page_id}:{revision_id}:{section_index}:{chunk}",
    }


def build_settings(
    recipe: dict[str, Any], ann: AnnSettings, bm25: Bm25Settings, embedder: Embedder
) -> dict[str, Any]:
    dense = recipe["dense"]
    return {
        "ann_threshold": ann.threshold,
        "hnsw": {"M": ann.hnsw_m, "ef_construction": ann.ef_construction, "ef_search": ann.ef_search},
        "bm25": {"k1": bm25.k1, "b": bm25.b, "tokenizer": "m4build.text.tokenize", "library": "bm25s"},
        "batch_size": int(dense["batch_size"]),
        "checkpoint_every": int(dense["checkpoint_every"]),
        "device": embedder.device,
        "search": dict(recipe.get("search", {})),
    }


def starting_manifest(root: Path, fresh: dict[str, Any]) -> dict[str, Any]:
    """The existing manifest with every stale entry dropped, or a new one (see the module docstring)."""
    if not (root / MANIFEST).is_file():
        return {**fresh, "languages": {}}
    old = read_manifest(root)
    same_passages = old.get("chunking") == fresh["chunking"]
    languages = old.get("languages", {}) if same_passages else {}
    if fresh["dense"] is not None and _dense_key(old) != _dense_key(fresh):
        languages = {lang: _without(entry, f"{INDEXES}/dense/") for lang, entry in languages.items()}
    if old.get("build", {}).get("bm25") != fresh["build"]["bm25"]:
        languages = {lang: _without(entry, f"{INDEXES}/bm25/") for lang, entry in languages.items()}
    # --no-dense keeps the dense description of shards built earlier on the same passages.
    dense = fresh["dense"] or (old.get("dense") if same_passages else None)
    return {**fresh, "dense": dense, "languages": languages}


def _dense_key(manifest: dict[str, Any]) -> Any:
    build = manifest.get("build", {})
    return manifest.get("dense"), build.get("ann_threshold"), build.get("hnsw")


def _without(entry: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {**entry, "files": [item for item in entry["files"] if not item["path"].startswith(prefix)]}


# -- the steps ----------------------------------------------------------------------------------------


class IndexBuilder:
    """Runs the steps for each language and keeps the manifest current after every shard."""

    def __init__(
        self, job: IndexJob, embedder: Embedder, manifest: dict[str, Any], progress: ProgressReporter
    ):
        self.job = job
        self.root = job.run
        self.embedder = embedder
        self.manifest = manifest
        self.progress = progress
        dense = job.recipe["dense"]
        self.ann = AnnSettings.from_recipe(dense)
        self.bm25 = Bm25Settings(k1=float(job.recipe["bm25"]["k1"]), b=float(job.recipe["bm25"]["b"]))
        self.slug = manifest["dense"]["model_slug"] if manifest["dense"] else model_slug(embedder.model_id)
        self.result = IndexResult(root=self.root, manifest=manifest)

    def language(self, lang: str, paths: Sequence[Path]) -> None:
        fingerprint = corpus_fingerprint(self.root, paths)
        entry = self.manifest["languages"].get(lang)
        if entry is None or entry.get("corpus_sha256") != fingerprint:
            entry = {"passages": 0, "corpus_sha256": fingerprint, "files": []}
            self.manifest["languages"][lang] = entry
        passages = self.chunk(lang, paths, entry)
        if self.job.dense:
            self.embed(lang, passages, entry)
        if self.job.bm25:
            self.index_bm25(lang, passages, entry)

    def _finished(self, step: str, lang: str, entries: list[dict[str, Any]]) -> bool:
        done = files_match(self.root, entries)
        getattr(self.result, "reused" if done else "built").setdefault(step, []).append(lang)
        return done

    def _record(self, entry: dict[str, Any], prefix: str, new: list[dict[str, Any]]) -> None:
        entry["files"] = [item for item in entry["files"] if not item["path"].startswith(prefix)] + new
        entry["files"].sort(key=lambda item: item["path"])
        write_manifest(self.root, self.manifest)

    def chunk(self, lang: str, paths: Sequence[Path], entry: dict[str, Any]) -> pa.Table:
        relative = passages_path(lang)
        if self._finished("chunk", lang, [item for item in entry["files"] if item["path"] == relative]):
            return pq.read_table(self.root / relative)
        chunking = self.manifest["chunking"]
        chunker = Chunker(
            self.embedder.tokenizer,
            ChunkSettings(
                chunking["size"], chunking["overlap"], chunking["max_seq_length"], chunking["passage_prefix"]
            ),
        )
        sections = read_sections(paths)
        rows: list[dict[str, Any]] = []
        with self.progress.task(f"chunk {lang}", total=len(sections)) as advance:
            for section in sections:
                rows.extend(chunker.run([section]))
                advance(1)
        table = passages_table(rows)
        atomic_write_parquet(self.root / relative, table)
        entry["passages"] = table.num_rows
        # Passages changed: shards built on the old ones are stale.
        entry["files"] = []
        self._record(entry, relative, [file_entry(self.root, relative, "passages", rows=table.num_rows)])
        return table

    def embed(self, lang: str, passages: pa.Table, entry: dict[str, Any]) -> None:
        folder = dense_dir(self.slug, lang)
        if passages.num_rows == 0 or self._finished("embed", lang, entries_under(entry["files"], folder)):
            return
        dense = self.job.recipe["dense"]
        parts_key = self._parts_key(entry, int(dense["checkpoint_every"]))
        parts = self.root / "state" / "index" / "embeddings" / f"{self.slug}-{parts_key}" / lang
        with self.progress.task(f"embed {lang}", total=passages.num_rows) as advance:
            vectors = embed_in_parts(
                self.embedder,
                embed_texts(passages),
                parts,
                part_size=int(dense["checkpoint_every"]),
                batch_size=int(dense["batch_size"]),
                advance=advance,
            )
        kind = write_dense_shard(self.root / folder, vectors, passages.column("id").to_pylist(), self.ann)
        new = [
            file_entry(self.root, f"{folder}/index.faiss", "dense", vectors=len(vectors), index_type=kind),
            file_entry(self.root, f"{folder}/ids.parquet", "ids", rows=len(vectors)),
        ]
        self._record(entry, folder + "/", new)
        shutil.rmtree(parts, ignore_errors=True)  # the shard now holds these vectors

    def _parts_key(self, entry: dict[str, Any], part_size: int) -> str:
        """Checkpointed parts belong to one model, chunking, corpus and part size (a part's file name
        gives its rows only for the size it was cut with); anything else starts afresh."""
        return stable_hash(
            [self.manifest["dense"], self.manifest["chunking"], entry["corpus_sha256"], part_size], length=12
        )

    def index_bm25(self, lang: str, passages: pa.Table, entry: dict[str, Any]) -> None:
        folder = bm25_dir(lang)
        if passages.num_rows == 0 or self._finished("bm25", lang, entries_under(entry["files"], folder)):
            return
        with self.progress.task(f"bm25 {lang}", total=1) as advance:
            write_bm25_shard(
                self.root / folder, embed_texts(passages), passages.column("id").to_pylist(), self.bm25
            )
            advance(1)
        written = sorted(p for p in (self.root / folder).iterdir() if p.is_file())
        new = [
            file_entry(self.root, f"{folder}/{p.name}", "ids" if p.name == "ids.parquet" else "bm25")
            for p in written
        ]
        self._record(entry, folder + "/", new)


def build_index(job: IndexJob, progress: ProgressReporter | None = None) -> IndexResult:
    """Build (or resume) the passages, dense and BM25 shards of ``job.run`` and write the manifest."""
    if not (job.dense or job.bm25):
        raise UsageError(
            "nothing to build: both --no-dense and --no-bm25 were given", "Drop one of the two flags."
        )
    progress = progress or NullProgress()
    started, started_at = time.monotonic(), utc_now()
    files = corpus_files(job.run)
    languages = select_languages(list(files), job.languages)
    clean_leftovers(job.run / INDEXES)
    clean_leftovers(RunFolder(job.run).step_dir("index"))
    dense = job.recipe["dense"]
    embedder = load_embedder(
        str(dense["model"]),
        {key: dense.get(key) for key in ("family", "query_prefix", "passage_prefix", "normalize")},
    )
    fresh = fresh_manifest(job, embedder)
    manifest = starting_manifest(job.run, fresh)
    builder = IndexBuilder(job, embedder, manifest, progress)
    for lang in languages:
        builder.language(lang, files[lang])
    manifest["build"].update(
        started_at=started_at, finished_at=utc_now(), seconds=round(time.monotonic() - started, 3)
    )
    write_manifest(job.run, manifest)
    return builder.result


def fresh_manifest(job: IndexJob, embedder: Embedder) -> dict[str, Any]:
    corpus_manifest = job.run / "manifest.json"
    ann = AnnSettings.from_recipe(job.recipe["dense"])
    bm25 = Bm25Settings(k1=float(job.recipe["bm25"]["k1"]), b=float(job.recipe["bm25"]["b"]))
    return {
        "format": FORMAT,
        "corpus": {
            "run": job.run.resolve().name,
            "manifest_sha256": sha256_file(corpus_manifest) if corpus_manifest.is_file() else None,
        },
        "chunking": chunking_settings(job.recipe, embedder),
        "dense": embedder.describe(model_slug(embedder.model_id)) if job.dense else None,
        "build": {
            **build_settings(job.recipe, ann, bm25, embedder),
            "recipe": job.recipe,
            "m4build_version": __version__,
            "versions": package_versions(PACKAGES),
        },
    }
