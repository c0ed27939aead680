"""Benchmark of RAVENEA's BM25 step at Wikipedia scale: our snapshot source against bare bm25s.

Run:  python benchmarks/ravenea_bm25.py [--docs 1000000] [--queries 1000] [--workdir DIR]
                                        [--json results.json] [--parts ours,bare]
Quick check:  python benchmarks/ravenea_bm25.py --docs 100000 --workdir /tmp/ravenea-bm25

RAVENEA asks for the BM25 top-10 English Wikipedia articles of each image's cultural caption,
over ~6M articles, on a 24 GiB machine. This measures, on ``--docs`` synthetic articles, what
that costs through the real code path and what bare bm25s costs on the same text.

Data. Synthetic articles in the ``wikimedia/wikipedia`` parquet schema (``id``, ``url``,
``title``, ``text``, all strings), written one row group at a time (the whole corpus is never in
memory) and kept under ``--workdir`` for reruns. Seeded, so every run sees the same bytes.
Words are pseudo-words drawn from a Zipf law (exponent ``--zipf`` over ``--vocab`` ranks, the
frequent words short, as in English), so posting lists have the skew of real text: a few
huge, most tiny. Each article also has a handful of its own rarer words (its "subject") that
make up its title, open its first paragraph and recur through it, as names do in a real
article; without that burstiness every article would hold more distinct terms, and so more
postings, than real ones. Article lengths are log-normal (median ``--median-words``, mean about
1.65x that: 300 gives ~3.4k characters, near the dataset's ~3.2k mean), in paragraphs of
25-140 words separated by blank lines, with heading lines between the later ones, as the
dataset's plain text has them. As that text has no markup for headings, the "lead" our source
indexes for this schema is the first ``LEAD_CHARS`` characters (~2.3k on average here, ~330
tokens). No word is an English stopword of bm25s or a single letter, so ``m4build.text.tokenize``
and ``bm25s.tokenize`` split the texts alike, but for one thing, checked on a sample: where a lead
is cut at ``LEAD_CHARS`` inside a word, the fragment left may be a letter or a stopword, which
ours keeps and bm25s drops (~3% of articles). Queries: ``--queries`` caption-like texts of 60-120 words
(RAVENEA's captions are ~60-120 words), each about one random article: 20-40% of its words
come from that article's title and lead, the rest from the Zipf background, in sentences.

Ours. ``SnapshotSource(parquet, cache_dir, wiki="enwiki")`` builds the index exactly as a user's
run would: parquet row batches -> plain text to ``<p>`` HTML -> worker processes (as many as the
spare cores, at most 3: one on a two-core machine) count the tokens of title + lead
(``m4build.text.tokenize``) and compress the HTML -> the building process stores the rows in the
SQLite doc store and hands the counts to ``m4build.bm25_writer``, which spills sorted postings to
disk in blocks and merges them a term range at a time into bm25s' saved files; checkpoints every
100k articles. A second process opens the cached index (memory-mapped) and calls
``search("enwiki", caption, k=10)`` once per caption (tokenise, score, deterministic top-k,
titles from the doc store).

Bare. What a bm25s user would write: read the parquet, make the same indexed string per article
(``title + "\\n" + lead``, the lead being the text's non-blank lines joined by spaces and cut at
``LEAD_CHARS`` characters, which is what our source indexes for this schema; checked equal to
it on the first row group), then ``bm25s.tokenize`` (its defaults: lower-case,
``\\w\\w+``, English stopwords) + ``BM25().index`` in memory, and ``retrieve(k=10)``: all captions as
one batch (bm25s' fastest way without numba), and one caption at a time (how a per-image lookup
calls it). Article order is page-id order on both sides, so bm25s' document positions map to
page ids directly.

Measures. Each side runs in a child process of its own, so the two never share a peak. In each
phase (build, load, queries) a thread samples ``/proc/self/status`` every 50 ms; the peak RSS
reported is the kernel's exact ``VmHWM``, reset at the start of each phase through
``/proc/self/clear_refs`` where the kernel allows it (otherwise the sampled maximum). Peaks are
also split into anonymous memory (what the process allocated) and file-backed pages (mapped
index files, which the kernel can drop and read back). Worker processes are counted apart: the
sampled peak of the process and all its descendants together (``peak_tree_rss_mib``), and CPU
seconds that include the workers' once they are reaped. The machine's load is measured from
``/proc/stat`` over each phase: cores busy in all, and how many of those were this process;
on a shared machine the rest is other work, which slows whichever side it overlaps, so CPU
seconds are reported beside wall time. Queries run ``--repeats`` passes; the best is reported.
Agreement: for each caption the two top-10 lists are compared; where they differ, bm25s' own
scores tell ties (the same scores in another order or another page among equals at the cut: ours
breaks ties by page id) from a difference, whose relative score gap is reported: the fragments
above make document lengths, and so every score, differ slightly, and near-ties can flip.

Linux only (``/proc``). Nothing here is a test: numbers vary with the machine and are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from bm25s.stopwords import STOPWORDS_EN

from m4build.sources.wikipedia import snapshot_inputs
from m4build.sources.wikipedia.snapshot import LEAD_CHARS, SnapshotSource, index_text
from report_table import table  # benchmarks/report_table.py: scripts here run with this folder on sys.path

K = 10
WIKI = "enwiki"
GENERATOR_VERSION = 1
"""Bump when the synthetic articles or captions change: data cached under ``--workdir`` is remade."""

ROW_GROUP = 10_000  # articles per parquet row group (and per generation step)
OWN_SHARE = 0.10  # share of an article's words that are its own subject words
LENGTH_SIGMA = 1.0  # of the log-normal article length
REFERENCE = {"docs": 1_000_000, "bare_index_s": 229.0, "bare_queries_per_s": 58.0}
"""Bare bm25s on 1M articles, measured on this machine by the author of issue 6."""

HF_SCHEMA = pa.schema(
    [("id", pa.string()), ("url", pa.string()), ("title", pa.string()), ("text", pa.string())]
)
MIB = 1024 * 1024


# --- synthetic articles and captions ----------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    """What the synthetic articles are made of; every field changes the bytes written."""

    docs: int
    vocab: int
    zipf: float
    median_words: int
    seed: int

    @property
    def name(self) -> str:
        return (
            f"synthetic-v{GENERATOR_VERSION}-d{self.docs}-v{self.vocab}-z{self.zipf:g}"
            f"-m{self.median_words}-s{self.seed}"
        )


def pseudo_words(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` distinct pseudo-words by frequency rank, frequent ones short as in English.

    Lengths grow with the log of the rank (rank 1: ~3 letters, rank 10^6: ~9); none is a single
    letter or one of bm25s' English stopwords, so both tokenizers keep every word whole.
    """
    ranks = np.arange(1, size + 1)
    lengths = np.clip(np.rint(2.5 + 0.45 * np.log(ranks) + rng.normal(0.0, 1.0, size)), 2, 14).astype(int)
    letters = rng.integers(ord("a"), ord("z") + 1, size=int(lengths.sum()), dtype=np.uint8).tobytes().decode()
    taken = set(STOPWORDS_EN)
    words, start = [], 0
    for length in lengths.tolist():
        word = letters[start : start + length]
        start += length
        while word in taken:  # short words collide: draw again, one letter longer
            word = "".join(chr(c) for c in rng.integers(ord("a"), ord("z") + 1, size=len(word) + 1))
        taken.add(word)
        words.append(word)
    return np.array(words, dtype=object)


def zipf_cdf(size: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, size + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def draw_ranks(rng: np.random.Generator, cdf: np.ndarray, count: int) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, rng.random(count), side="right"), len(cdf) - 1)


def sentences(words: list[str], length: int = 18) -> str:
    """Words as sentences: capitalised, full stops; the punctuation only matters for realism."""
    return " ".join(" ".join(words[i : i + length]).capitalize() + "." for i in range(0, len(words), length))


def article_rows(
    rng: np.random.Generator, words: np.ndarray, cdf: np.ndarray, count: int, median_words: int, first_id: int
) -> tuple[dict[str, list[str]], int, int]:
    """``count`` articles as parquet columns, the last page id used, and how many words they hold."""
    vocab = len(words)
    lengths = np.clip(rng.lognormal(math.log(median_words), LENGTH_SIGMA, count), 15, 30 * median_words)
    lengths = lengths.astype(int)
    own_counts = rng.integers(3, 9, count)
    own = np.exp(rng.uniform(math.log(200), math.log(vocab), size=(count, 8))).astype(int)
    title_lengths = rng.integers(1, 4, count)
    gaps = rng.integers(1, 12, count)  # page ids rise with gaps, as enwiki's do
    lead_paragraphs = rng.integers(1, 4, count)

    total = int(lengths.sum())
    ranks = draw_ranks(rng, cdf, total)
    owner = np.repeat(np.arange(count), lengths)
    mine = rng.random(total) < OWN_SHARE
    pick = (rng.random(total) * own_counts[owner]).astype(int)
    ranks[mine] = own[owner[mine], pick[mine]]
    tokens = words[ranks].tolist()
    paragraph_sizes = rng.integers(25, 141, size=total // 25 + count).tolist()
    headed = (rng.random(len(paragraph_sizes)) < 0.4).tolist()
    heading_sizes = rng.integers(1, 4, size=len(paragraph_sizes)).tolist()

    columns: dict[str, list[str]] = {"id": [], "url": [], "title": [], "text": []}
    page_id, start, p = first_id, 0, 0
    for i in range(count):
        page_id += int(gaps[i])
        title = " ".join(word.capitalize() for word in words[own[i, : title_lengths[i]]])
        body = tokens[start : start + lengths[i]]
        start += lengths[i]
        lines, position, number = [], 0, 0
        while position < len(body):
            chunk = body[position : position + paragraph_sizes[p]]
            position += paragraph_sizes[p]
            if number == 0:
                lines.append(f"{title} {sentences(chunk)}")
            else:
                if number >= lead_paragraphs[i] and headed[p]:
                    lines.append(" ".join(chunk[: heading_sizes[p]]).capitalize())
                    chunk = chunk[heading_sizes[p] :]
                lines.append(sentences(chunk))
            number += 1
            p += 1
        columns["id"].append(str(page_id))
        columns["url"].append(f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}")
        columns["title"].append(title)
        columns["text"].append("\n\n".join(line for line in lines if line))
    return columns, page_id, int(lengths.sum() + title_lengths.sum())


def lead(text: str) -> str:
    """The lead our snapshot source indexes for this schema: non-blank lines, joined, cut."""
    return " ".join(line for line in text.splitlines() if line.strip())[:LEAD_CHARS]


def write_corpus(corpus: Corpus, folder: Path) -> dict[str, Any]:
    """Writes ``articles.parquet`` a row group at a time; returns its statistics (``meta.json``)."""
    started = time.perf_counter()
    rng = np.random.default_rng(corpus.seed)
    words = pseudo_words(rng, corpus.vocab)
    cdf = zipf_cdf(corpus.vocab, corpus.zipf)
    partial = folder / "articles.parquet.partial"
    text_chars = indexed_chars = words_total = 0
    page_id = 0
    with pq.ParquetWriter(partial, HF_SCHEMA, compression="zstd") as writer:
        for first in range(0, corpus.docs, ROW_GROUP):
            count = min(ROW_GROUP, corpus.docs - first)
            columns, page_id, written = article_rows(rng, words, cdf, count, corpus.median_words, page_id)
            writer.write_table(pa.table(columns, schema=HF_SCHEMA), row_group_size=ROW_GROUP)
            text_chars += sum(map(len, columns["text"]))
            indexed_chars += sum(len(t) + 1 + len(lead(x)) for t, x in zip(columns["title"], columns["text"]))
            words_total += written
            print(f"  generated {first + count:,} articles", file=sys.stderr, flush=True)
    partial.rename(folder / "articles.parquet")
    return {
        **asdict(corpus),
        "generator_version": GENERATOR_VERSION,
        "parquet_bytes": (folder / "articles.parquet").stat().st_size,
        "text_chars_mean": round(text_chars / corpus.docs, 1),
        "text_words_mean": round(words_total / corpus.docs, 1),
        "text_bytes_total": text_chars,  # the synthetic text is ASCII: characters are bytes
        "indexed_chars_mean": round(indexed_chars / corpus.docs, 1),
        "generate_s": round(time.perf_counter() - started, 1),
    }


def caption_queries(corpus: Corpus, parquet: Path, count: int) -> list[dict[str, Any]]:
    """Caption-like queries, each about one random article (the ``target``), in a seeded order."""
    rng = np.random.default_rng([corpus.seed, 1])
    words = pseudo_words(np.random.default_rng(corpus.seed), corpus.vocab)  # the corpus' own words
    cdf = zipf_cdf(corpus.vocab, corpus.zipf)
    targets = np.sort(rng.choice(corpus.docs, size=min(count, corpus.docs), replace=False))
    source = pq.ParquetFile(parquet)
    queries = []
    for group in np.unique(targets // ROW_GROUP).tolist():
        table = source.read_row_group(group, columns=["id", "title", "text"]).to_pydict()
        for row in (targets[targets // ROW_GROUP == group] - group * ROW_GROUP).tolist():
            about = re.findall(r"\w+", f"{table['title'][row]} {lead(table['text'][row])}".lower())
            length = int(rng.integers(60, 121))
            topical = int(length * rng.uniform(0.2, 0.4))
            chosen = [about[i] for i in rng.integers(0, len(about), topical)]
            chosen += words[draw_ranks(rng, cdf, length - topical)].tolist()
            order = rng.permutation(len(chosen))
            text = sentences([chosen[i] for i in order.tolist()], length=int(rng.integers(12, 25)))
            queries.append({"text": text, "target": int(table["id"][row])})
    return [queries[i] for i in rng.permutation(len(queries)).tolist()]


def prepared_data(corpus: Corpus, queries: int, workdir: Path) -> tuple[Path, dict[str, Any]]:
    """The data folder for ``corpus`` (made if missing) and its statistics; queries cached beside."""
    folder = workdir / corpus.name
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        print(f"data: reusing {folder}", file=sys.stderr)
    else:
        print(f"data: writing {corpus.docs:,} synthetic articles to {folder}", file=sys.stderr)
        folder.mkdir(parents=True, exist_ok=True)
        meta = write_corpus(corpus, folder)
        meta_path.with_suffix(".partial").write_text(json.dumps(meta, indent=2))
        meta_path.with_suffix(".partial").rename(meta_path)
    query_path = folder / f"queries-{queries}.json"
    if not query_path.is_file():
        partial = query_path.with_suffix(".partial")
        partial.write_text(json.dumps(caption_queries(corpus, folder / "articles.parquet", queries)))
        partial.rename(query_path)
    return folder, meta


# --- measuring --------------------------------------------------------------------------------


def proc_status(pid: str = "self") -> dict[str, int]:
    """A process's memory counters from ``/proc/PID/status``, in bytes (empty once it has exited)."""
    found = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    found[key] = int(value.split()[0]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return found


def descendants(pid: str) -> list[str]:
    """Child processes, and theirs (``/proc/PID/task/*/children``): the build's tokenising workers."""
    found = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += children.read_text().split()
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found + [grandchild for child in found for grandchild in descendants(child)]


def tree_cpu_seconds() -> float:
    """CPU time of this process and of its children once they have been waited for (the workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def tree_rss() -> int:
    """Resident memory of this process and all its descendants, in bytes."""
    return sum(proc_status(pid).get("VmRSS", 0) for pid in ["self", *descendants(str(os.getpid()))])


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs together, from the first line of ``/proc/stat``."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def reset_peak() -> bool:
    """Resets the kernel's peak RSS (``VmHWM``) of this process; False where it is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


class MemoryWatch:
    """Samples this process's memory in a thread; each ``phase`` reports its own peaks and load."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.peaks: dict[str, int] = {}
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.stopped.wait(self.interval):
            status = proc_status()
            status["TreeRSS"] = tree_rss()
            with self.lock:
                for key, value in status.items():
                    self.peaks[key] = max(self.peaks.get(key, 0), value)

    @contextmanager
    def phase(self, record: dict[str, Any]) -> Iterator[None]:
        """Times the block and fills ``record`` with its wall/CPU time, peaks and machine load."""
        exact = reset_peak()
        with self.lock:
            self.peaks = proc_status()
            self.peaks["TreeRSS"] = tree_rss()
        busy0, total0 = cpu_ticks()
        wall0, cpu0 = time.perf_counter(), tree_cpu_seconds()
        yield
        wall, cpu = time.perf_counter() - wall0, tree_cpu_seconds() - cpu0
        busy1, total1 = cpu_ticks()
        status = proc_status()
        with self.lock:
            peaks = {key: max(self.peaks.get(key, 0), value) for key, value in status.items()}
        cores = os.cpu_count() or 1
        machine_busy = cores * (busy1 - busy0) / max(1, total1 - total0)
        record.update(
            seconds=round(wall, 2),
            cpu_seconds=round(cpu, 2),
            peak_rss_mib=round((status["VmHWM"] if exact else peaks["VmRSS"]) / MIB),
            peak_rss_source="VmHWM" if exact else "sampled VmRSS",
            peak_anon_mib=round(peaks["RssAnon"] / MIB),
            peak_file_mib=round(peaks["RssFile"] / MIB),
            # with its worker processes (sampled): what the machine must hold for the whole build
            peak_tree_rss_mib=round(max(peaks.get("TreeRSS", 0), status["VmHWM"] if exact else 0) / MIB),
            end_rss_mib=round(status["VmRSS"] / MIB),
            cores_busy=round(machine_busy, 2),
            cores_ours=round(cpu / wall, 2) if wall else 0.0,
            cores_others=round(max(0.0, machine_busy - cpu / wall), 2) if wall else 0.0,
            loadavg_end=os.getloadavg()[0],
        )

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()


def combined(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """Consecutive phases as one: times add up, peaks are the highest, load is time-weighted."""
    wall = sum(p["seconds"] for p in phases)
    cpu = sum(p["cpu_seconds"] for p in phases)
    busy = sum(p["cores_busy"] * p["seconds"] for p in phases) / wall if wall else 0.0
    return {
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        **{key: max(p[key] for p in phases) for key in ("peak_rss_mib", "peak_anon_mib", "peak_file_mib")},
        "peak_rss_source": phases[0]["peak_rss_source"],
        "end_rss_mib": phases[-1]["end_rss_mib"],
        "cores_busy": round(busy, 2),
        "cores_ours": round(cpu / wall, 2) if wall else 0.0,
        "cores_others": round(max(0.0, busy - cpu / wall), 2) if wall else 0.0,
        "loadavg_end": phases[-1]["loadavg_end"],
    }


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def mapped_files(under: Path) -> list[str]:
    """Files under ``under`` that this process has memory-mapped (``/proc/self/maps``)."""
    prefix = str(under.resolve())
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)  # address, perms, offset, device, inode, path (if any)
            if len(fields) == 6 and fields[5].startswith(prefix):
                found.add(os.path.relpath(fields[5].strip(), prefix))
    return sorted(found)


# --- the sides, each run in a child process --------------------------------------------------


def ours_build(data: Path, run: Path, docs: int) -> dict[str, Any]:
    cache = run / "snapshot-cache"
    shutil.rmtree(cache, ignore_errors=True)  # always a cold build, never a cache hit
    started, read = time.perf_counter(), {}

    def progress(records: int) -> None:
        if records % 100_000 == 0:
            print(f"  ours: {records:,} articles read", file=sys.stderr, flush=True)
        if records == docs:  # the streaming pass is over; what is held now is what stays
            status = proc_status()
            read.update(
                seconds=round(time.perf_counter() - started, 2),
                rss_mib=round(status["VmRSS"] / MIB),
                anon_mib=round(status["RssAnon"] / MIB),
            )

    watch, build = MemoryWatch(), {}
    with watch.phase(build):
        source = SnapshotSource(data / "articles.parquet", cache, wiki=WIKI, progress=progress)
    watch.close()
    folder = source.cache_path / WIKI
    source.close()
    return {
        "build": build,
        "after_reading": read,
        "index_and_save_seconds": round(build["seconds"] - read["seconds"], 2),
        "manifest_build_seconds": source.manifest["build_seconds"],
        "articles": source.manifest["wikis"][WIKI],
        "vocabulary": source.manifest["vocabulary"][WIKI],
        "preparing_workers": source.manifest["preparing_workers"],
        "index_bytes": folder_bytes(folder / "bm25"),
        "doc_store_bytes": (folder / "docs.sqlite").stat().st_size,
    }


def timed_passes(watch: MemoryWatch, repeats: int, run_queries) -> tuple[dict[str, Any], Any]:
    """Runs all the queries ``repeats`` times; the fastest pass is reported, the first one kept too.

    The first pass of a fresh process also pays for faulting the mapped index in; on a machine
    shared with other work the best pass is the least disturbed one.
    """
    passes: list[dict[str, Any]] = []
    for _ in range(repeats):
        passes.append({})
        with watch.phase(passes[-1]):
            found = run_queries()
    best = dict(min(passes, key=lambda p: p["seconds"]))
    best["first_pass_seconds"] = passes[0]["seconds"]
    best["peak_rss_mib"] = max(p["peak_rss_mib"] for p in passes)
    return best, found


def with_rates(phase: dict[str, Any], queries: int) -> dict[str, Any]:
    """Queries per second of wall time, and per CPU-second (what a machine to itself would see)."""
    phase["queries_per_s"] = round(queries / phase["seconds"], 1)
    phase["queries_per_cpu_s"] = round(queries / phase["cpu_seconds"], 1)
    return phase


def ours_query(data: Path, run: Path, queries: list[dict[str, Any]], repeats: int) -> dict[str, Any]:
    cache = run / "snapshot-cache"
    watch, load = MemoryWatch(), {}
    with watch.phase(load):
        source = SnapshotSource(data / "articles.parquet", cache, wiki=WIKI)
    if source.stats.as_dict().get("cache_hits") != 1:
        raise RuntimeError("the query side rebuilt the index instead of loading the cached one")
    mapped = mapped_files(source.cache_path)
    captions = [q["text"] for q in queries]
    search, top = timed_passes(
        watch, repeats, lambda: [[hit.page_id for hit in source.search(WIKI, c, K)] for c in captions]
    )
    watch.close()
    source.close()
    (run / "ours-top.json").write_text(json.dumps(top))
    return {
        "load": load,
        "search": with_rates(search, len(captions)),
        "mapped_files": mapped,
        "target_at_10": hit_rate(top, queries),
    }


def hit_rate(top: list[list[int]], queries: list[dict[str, Any]]) -> float:
    """Share of captions whose source article is in their top-10: a sanity check of the data."""
    return round(sum(q["target"] in pages for pages, q in zip(top, queries)) / max(1, len(queries)), 3)


def bare_texts(parquet: Path) -> tuple[list[str], np.ndarray]:
    """The indexed string of every article, as a bm25s user would make it, and the page ids.

    Read a row group at a time, as our source reads: one ``iter_batches`` over the whole file
    holds every row group read until it ends (~1.8 GB for 1M articles), which would be charged to
    bare's peak.
    """
    source, texts, page_ids = pq.ParquetFile(parquet), [], []
    for group in range(source.num_row_groups):
        columns = source.read_row_group(group, columns=["id", "title", "text"]).to_pydict()
        page_ids.extend(map(int, columns["id"]))
        texts.extend(f"{title}\n{lead(text)}" for title, text in zip(columns["title"], columns["text"]))
    return texts, np.asarray(page_ids, dtype=np.int64)


def check_same_texts(parquet: Path, texts: list[str]) -> int:
    """Bare must index what our source indexes for this schema; returns how many articles were checked.

    Checked on the first row group against both of the source's ways to that text: the lead it
    takes from the plain-text lines, and ``index_text`` over the HTML it stores (the private row
    reader is used on purpose: the check is about what the source does with a row).
    """
    table = pq.ParquetFile(parquet).read_row_group(0, columns=["id", "url", "title", "text"]).to_pylist()
    for number, row in enumerate(table):
        record = snapshot_inputs._hf_row(row, WIKI)
        if not texts[number] == f"{record.title}\n{record.lead}" == index_text(record.title, record.html):
            raise RuntimeError(f"article {number}: bare's indexed text is not the snapshot source's")
    return len(table)


def tokenization_agrees(texts: list[str]) -> dict[str, int]:
    """How many of ``texts`` both tokenizers split alike: exactly, and apart from what bm25s drops.

    ``m4build.text.tokenize`` keeps one-letter words and stopwords; bm25s' defaults (``\\w\\w+``,
    English stopwords) drop them. No synthetic word is either, but the ``LEAD_CHARS`` cut ends a
    long lead inside a word, and the fragment left can be one letter or spell a stopword ("or").
    """
    from m4build.text.tokenize import tokenize

    theirs = bm25s.tokenize(texts, return_ids=False, show_progress=False)
    ours = [tokenize(text) for text in texts]
    dropped = set(STOPWORDS_EN)
    return {
        "texts": len(texts),
        "same": sum(a == list(b) for a, b in zip(ours, theirs)),
        "same_but_dropped": sum(
            [t for t in a if len(t) > 1 and t not in dropped] == list(b) for a, b in zip(ours, theirs)
        ),
    }


def bare(data: Path, run: Path, queries: list[dict[str, Any]], repeats: int, compare: bool) -> dict[str, Any]:
    parquet = data / "articles.parquet"
    watch, prepare, tokenize_phase, index_phase = MemoryWatch(), {}, {}, {}
    with watch.phase(prepare):
        texts, page_ids = bare_texts(parquet)
    with watch.phase(tokenize_phase):
        tokens = bm25s.tokenize(texts, show_progress=False)
    with watch.phase(index_phase):
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
    build = combined([prepare, tokenize_phase, index_phase])
    if np.any(np.diff(page_ids) <= 0):
        raise RuntimeError("the parquet is not in page-id order: bm25s positions would not map to ours")
    sample = [texts[i] for i in range(0, len(texts), max(1, len(texts) // 1000))]
    same_texts_checked = check_same_texts(parquet, texts)
    agree_docs = tokenization_agrees(sample)
    del texts, tokens

    captions = [q["text"] for q in queries]
    batch, (found, scores) = timed_passes(
        watch,
        repeats,
        lambda: retriever.retrieve(bm25s.tokenize(captions, show_progress=False), k=K, show_progress=False),
    )
    single: dict[str, Any] = {}
    with watch.phase(single):
        for caption in captions:
            retriever.retrieve(bm25s.tokenize([caption], show_progress=False), k=K, show_progress=False)
    watch.close()
    top = [page_ids[row[score > 0]].tolist() for row, score in zip(found, scores)]
    result = {
        "build": build,
        "prepare": prepare,
        "tokenize": tokenize_phase,
        "index": index_phase,
        "index_seconds": round(tokenize_phase["seconds"] + index_phase["seconds"], 2),
        "search_batch": with_rates(batch, len(captions)),
        "search_single": with_rates(single, len(captions)),
        "target_at_10": hit_rate(top, queries),
        "same_texts_checked": same_texts_checked,
        "tokenization_agrees": {"articles": agree_docs, "captions": tokenization_agrees(captions)},
    }
    ours_top = run / "ours-top.json"
    if compare and ours_top.is_file():
        result["agreement"] = agreement(json.loads(ours_top.read_text()), top, captions, retriever, page_ids)
    return result


def agreement(
    ours: list[list[int]],
    theirs: list[list[int]],
    captions: list[str],
    retriever: bm25s.BM25,
    page_ids: np.ndarray,
) -> dict[str, Any]:
    """Compares the top-10 lists; a difference is a tie when bm25s scores both lists alike."""
    counts = {"identical": 0, "same_set_other_order": 0, "ties_at_the_cut": 0, "different": 0}
    examples, worst_gap = [], 0.0
    for number, (mine, other) in enumerate(zip(ours, theirs)):
        if mine == other:
            counts["identical"] += 1
            continue
        scores = retriever.get_scores(
            bm25s.tokenize([captions[number]], return_ids=False, show_progress=False)[0]
        )
        mine_scores = np.sort(scores[np.searchsorted(page_ids, mine)])[::-1]
        other_scores = np.sort(scores[np.searchsorted(page_ids, other)])[::-1]
        if len(mine) == len(other) and np.allclose(mine_scores, other_scores, rtol=1e-6, atol=0):
            counts["same_set_other_order" if set(mine) == set(other) else "ties_at_the_cut"] += 1
        else:
            counts["different"] += 1
            gap = (
                float(np.max(np.abs(mine_scores - other_scores) / other_scores))
                if len(mine) == len(other)
                else 1
            )
            worst_gap = max(worst_gap, gap)
            if len(examples) < 3:
                examples.append({"caption": number, "ours": mine, "bare": other, "relative_score_gap": gap})
    overlap = np.mean([len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(ours, theirs)])
    return {
        **counts,
        "mean_overlap_at_10": round(float(overlap), 4),
        "largest_relative_score_gap": worst_gap,
        "examples": examples,
    }


# --- running and reporting --------------------------------------------------------------------


def run_child(side: str, args: argparse.Namespace, data: Path, run: Path) -> dict[str, Any]:
    """Runs one side in a fresh Python process; its result comes back as JSON in the run folder."""
    result = run / f"{side}.json"
    result.unlink(missing_ok=True)
    command = [
        sys.executable,
        __file__,
        "--child",
        side,
        "--data",
        str(data),
        "--run",
        str(run),
        "--queries",
        str(args.queries),
        "--repeats",
        str(args.repeats),
    ]
    if "ours" in args.parts.split(","):
        command.append("--compare")
    print(f"running {side} ...", file=sys.stderr, flush=True)
    subprocess.run(command, check=True)
    return json.loads(result.read_text())


def child_main(args: argparse.Namespace) -> None:
    data, run = Path(args.data), Path(args.run)
    queries = json.loads((data / f"queries-{args.queries}.json").read_text())
    if args.child == "ours-build":
        result = ours_build(data, run, json.loads((data / "meta.json").read_text())["docs"])
    elif args.child == "ours-query":
        result = ours_query(data, run, queries, args.repeats)
    else:
        result = bare(data, run, queries, args.repeats, args.compare)
    (run / f"{args.child}.json").write_text(json.dumps(result, indent=2))


def dig(result: dict[str, Any] | None, *keys: str) -> Any:
    """``result[k1][k2]...``, or None where a side or a key is absent (a side left out by --parts)."""
    value: Any = result
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def number(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def ratio(ours: float | None, other: float | None) -> str:
    return "" if not ours or not other else f"{ours / other:.2f}x"


def cores(phase: dict[str, Any] | None) -> str:
    return "" if phase is None else f"{phase['cores_ours']:.2f} / {phase['cores_others']:.2f}"


def memory(phase: dict[str, Any] | None) -> str:
    if phase is None:
        return ""
    return f"{phase['peak_rss_mib']:,} ({phase['peak_anon_mib']:,} + {phase['peak_file_mib']:,})"


def row(label: str, ours: float | None, other: float | None, digits: int = 1) -> list[str]:
    return [label, number(ours, digits), number(other, digits), ratio(ours, other)]


def report(results: dict[str, Any]) -> None:
    data = results["data"]
    build, query, other = results.get("ours_build"), results.get("ours_query"), results.get("bare")
    ours_build, bare_build = dig(build, "build"), dig(other, "build")
    search, batch, single = dig(query, "search"), dig(other, "search_batch"), dig(other, "search_single")
    text_gib, captions = data["text_bytes_total"] / 2**30, results["queries"]
    print(
        f"\nRAVENEA BM25 step: {data['docs']:,} synthetic articles ({text_gib:.2f} GiB of text, "
        f"{data['text_chars_mean']:,.0f} characters on average, {data['indexed_chars_mean']:,.0f} of them "
        f"indexed as title + lead); {captions} captions of {results['caption_words_mean']:.0f} words on "
        f"average; k={K}"
    )
    rows = [
        row("build, s", dig(ours_build, "seconds"), dig(bare_build, "seconds")),
        row(
            "  ours: streaming pass (parquet -> doc store, tokens)",
            dig(build, "after_reading", "seconds"),
            None,
        ),
        row("  ours: BM25 index + save", dig(build, "index_and_save_seconds"), None),
        row("  bare: reading the parquet, cutting leads", None, dig(other, "prepare", "seconds")),
        row("  bare: bm25s.tokenize", None, dig(other, "tokenize", "seconds")),
        row("  bare: BM25.index", None, dig(other, "index", "seconds")),
        row("build, CPU s", dig(ours_build, "cpu_seconds"), dig(bare_build, "cpu_seconds")),
        ["build: cores used by us / by other work", cores(ours_build), cores(bare_build), ""],
        [
            "build: peak RSS, MiB (anon + file-backed)",
            memory(ours_build),
            memory(bare_build),
            ratio(dig(ours_build, "peak_rss_mib"), dig(bare_build, "peak_rss_mib")),
        ],
        row(
            "build: peak RSS with worker processes, MiB",
            dig(ours_build, "peak_tree_rss_mib"),
            dig(bare_build, "peak_tree_rss_mib"),
            0,
        ),
        row("  ours: RSS after the streaming pass, MiB", dig(build, "after_reading", "rss_mib"), None, 0),
        row("saved BM25 index, MiB", None if build is None else build["index_bytes"] / MIB, None, 0),
        row(
            "saved doc store (SQLite, zstd HTML), MiB",
            None if build is None else build["doc_store_bytes"] / MIB,
            None,
            0,
        ),
        row("load (ours: memory-mapped), s", dig(query, "load", "seconds"), None, 2),
        ["queries: peak RSS, MiB (anon + file-backed)", memory(search), memory(batch), ""],
        row("queries/s (bare: one batch)", dig(search, "queries_per_s"), dig(batch, "queries_per_s")),
        row(
            "queries/s (bare: one caption per call)",
            dig(search, "queries_per_s"),
            dig(single, "queries_per_s"),
        ),
        row(
            "queries per CPU-second (bare: one batch)",
            dig(search, "queries_per_cpu_s"),
            dig(batch, "queries_per_cpu_s"),
        ),
        row("queries: first pass, s", dig(search, "first_pass_seconds"), dig(batch, "first_pass_seconds"), 2),
        ["queries: cores used by us / by other work", cores(search), cores(batch), ""],
        row("caption's own article in its top-10", dig(query, "target_at_10"), dig(other, "target_at_10"), 3),
    ]
    table(
        "ours: SnapshotSource build, then search(k=10) per caption; bare: bm25s in memory",
        ["", "ours", "bare", "ours/bare"],
        rows,
    )
    if data["docs"] == REFERENCE["docs"]:
        print(
            f"reference (issue 6: bare bm25s on this machine, 1M articles): "
            f"{REFERENCE['bare_index_s']:.0f} s to index, {REFERENCE['bare_queries_per_s']:.0f} queries/s"
        )
    if query is not None:
        print(f"ours memory-maps: {', '.join(query['mapped_files']) or 'nothing'}")
    for kind, agrees in (dig(other, "tokenization_agrees") or {}).items():
        print(
            f"same tokens from both tokenizers, {kind}: {agrees['same']}/{agrees['texts']} exactly, "
            f"{agrees['same_but_dropped']}/{agrees['texts']} apart from what bm25s drops (letters, stopwords)"
        )
    if found := dig(other, "agreement"):
        print(f"top-{K} lists: " + ", ".join(f"{k} {v}" for k, v in found.items() if k != "examples"))
        for example in found["examples"]:
            print(f"  differs: {example}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=1_000_000, help="synthetic articles")
    parser.add_argument("--queries", type=int, default=1000, help="caption-like queries")
    parser.add_argument("--workdir", help="keeps the generated data for reruns (default: a temporary folder)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--parts", default="ours,bare", help="comma-separated: ours, bare")
    parser.add_argument("--vocab", type=int, default=2_000_000, help="pseudo-words in the Zipf vocabulary")
    parser.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent of word frequencies")
    parser.add_argument("--median-words", type=int, default=300, help="median article length in words")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument(
        "--repeats", type=int, default=2, help="passes over the queries (the best is reported)"
    )
    for hidden in ("--child", "--data", "--run"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--compare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return
    parts = set(args.parts.split(","))
    if not parts or parts - {"ours", "bare"}:
        parser.error(f"--parts takes ours and/or bare, not {args.parts!r}")

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="ravenea-bm25-"))
    try:
        corpus = Corpus(args.docs, args.vocab, args.zipf, args.median_words, args.seed)
        data, meta = prepared_data(corpus, args.queries, workdir)
        run = workdir / f"run-{corpus.name}"
        run.mkdir(exist_ok=True)
        (run / "ours-top.json").unlink(missing_ok=True)
        queries = json.loads((data / f"queries-{args.queries}.json").read_text())
        results: dict[str, Any] = {
            "benchmark": "ravenea_bm25",
            "machine": {
                "cpus": os.cpu_count(),
                "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
                "loadavg_start": os.getloadavg(),
                "python": platform.python_version(),
                "bm25s": bm25s.__version__,
                "numpy": np.__version__,
                "pyarrow": pa.__version__,
            },
            "data": meta,
            "queries": len(queries),
            "caption_words_mean": round(float(np.mean([len(q["text"].split()) for q in queries])), 1),
            "reference": REFERENCE,
        }
        if "ours" in parts:
            results["ours_build"] = run_child("ours-build", args, data, run)
            results["ours_query"] = run_child("ours-query", args, data, run)
        if "bare" in parts:
            results["bare"] = run_child("bare", args, data, run)
        results["machine"]["loadavg_end"] = os.getloadavg()
        report(results)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
