"""Benchmark of the M4-RAG corpus crawl: requests per unique article, parse speed, items/s.

Run:  python benchmarks/corpus_crawl.py [--items 1800] [--dishes 200] [--templates 30] [--langs 9] [--pages 3000]

1. Crawls synthetic benchmark items through the real pipeline (``build_corpus`` with the real
   mwclient-based ``MediaWikiApiSource``) against the loopback MediaWiki server of the tests, and
   reports HTTP requests per unique article. For comparison it counts, on the same query set, what
   the peer code path costs: one ``list=search`` per query and item (no query dedup) plus one
   content request per hit (no dedup before download).
2. Parses every real HTML fixture in ``tests/fixtures/wikipedia/html`` and reports sections/s.
3. Reports end-to-end items/s of the crawl (all steps, including assembly and writing).

Nothing here is a test: numbers vary with the machine and are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from servers.mediawiki import MediaWikiServer, synthetic_pages  # noqa: E402

from m4build.languages import load_languages  # noqa: E402
from m4build.pipelines.m4rag.corpus import CorpusJob, build_corpus  # noqa: E402
from m4build.recipes import load_recipe  # noqa: E402
from m4build.records import BenchmarkItem  # noqa: E402
from m4build.runs import RunFolder  # noqa: E402
from m4build.sources.wikipedia.api import MediaWikiApiSource  # noqa: E402
from m4build.text.sections import parse_sections  # noqa: E402

LANGS = ["ja_formal", "fr", "zh_cn", "ar", "es", "ko_formal", "th", "id_formal", "ru_formal"]


def _lead_words(page, count: int = 6) -> str:
    return " ".join(page.html.split("<p>")[2].split()[:count])


def synthetic_items(
    pages_by_wiki: dict[str, list], languages, n_items: int, n_dishes: int, n_templates: int, seed: int = 7
):
    """Items that ask about ``n_dishes`` dishes in several languages, as WorldCuisines does.

    A dish is a synthetic article (the same title in every wiki). Questions come from
    ``n_templates`` question templates per language, as WorldCuisines' do (its question prompts,
    e.g. "What is this dish called?", name no dish); a template's words are taken from an article
    that is not a dish, so that question searches have real hits of their own.
    """
    rng = random.Random(seed)
    english = pages_by_wiki["enwiki"]
    picked = rng.sample(range(len(english)), n_dishes + n_templates)
    dishes, templates = picked[:n_dishes], picked[n_dishes:]
    items = []
    for number in range(n_items):
        dish = dishes[number % n_dishes]
        template = templates[number % n_templates]
        language = languages[(number // n_dishes) % len(languages)]
        native = pages_by_wiki[language.dbname][dish]
        words = _lead_words(english[template])
        native_words = _lead_words(pages_by_wiki[language.dbname][template])
        items.append(
            BenchmarkItem(
                benchmark="worldcuisines",
                item_id=f"synthetic/{number:05d}/{language.code}",
                lang=language.code,
                question=native_words,
                answer=native.title,
                question_en=words,
                answer_en=english[dish].title,
                domain_en="cuisine",
                domain="cuisine",
            )
        )
    return items


def serve(wikis: list[str], n_pages: int, delay: float, urls: multiprocessing.Queue, stop) -> None:
    """The server runs in its own process so that its work does not share our interpreter lock."""
    with MediaWikiServer(synthetic_pages(n_pages, wikis=wikis, seed=3), delay=delay) as server:
        urls.put(server.url_template)
        stop.wait()


def crawl(n_items: int, n_dishes: int, n_templates: int, n_langs: int, n_pages: int, delay: float) -> dict:
    languages = load_languages().resolve("worldcuisines", LANGS[:n_langs])
    wikis = ["enwiki", *sorted({language.dbname for language in languages})]
    pages_by_wiki: dict[str, list] = {}
    for page in synthetic_pages(n_pages, wikis=wikis, seed=3):
        pages_by_wiki.setdefault(page.wiki, []).append(page)
    items = synthetic_items(pages_by_wiki, languages, n_items, n_dishes, n_templates)
    recipe = load_recipe("m4rag")
    urls: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(wikis, n_pages, delay, urls, stop), daemon=True)
    server.start()
    url_template = urls.get(timeout=300)
    with tempfile.TemporaryDirectory() as folder:
        source = MediaWikiApiSource("m4build-benchmark (bench@example.org)", endpoint=url_template)
        job = CorpusJob(
            benchmark="worldcuisines",
            languages=languages,
            recipe=recipe,
            source=source,
            source_info={"kind": "api"},
            run=RunFolder(Path(folder) / "run"),
            load_items=lambda: items,
            workers=min(32, 3 * len(wikis)),
        )
        started = time.perf_counter()
        result = build_corpus(job)
        seconds = time.perf_counter() - started
        source.close()
    stop.set()
    server.join(timeout=30)
    requests = {key.split(".", 1)[1]: value for key, value in source.stats.as_dict().items() if key.startswith("requests.")}
    total_requests = sum(requests.values())
    unique = result.counts["unique_articles"]
    hits = result.manifest["steps"]["search"].get("hits", 0)
    peer_requests = result.counts["queries"] + hits * result.counts["queries"] / max(1, result.counts["unique_queries"])
    return {
        "items": len(items),
        "languages": len(languages),
        "queries": result.counts["queries"],
        "unique_queries": result.counts["unique_queries"],
        "unique_articles": unique,
        "sections": result.counts["sections"],
        "requests": dict(sorted(requests.items())),
        "requests_per_unique_article": total_requests / max(1, unique),
        "peer_requests_per_unique_article": peer_requests / max(1, unique),
        "seconds": seconds,
        "items_per_second": len(items) / seconds,
    }


def parse_speed(repeats: int = 3) -> dict:
    documents = [gzip.decompress(path.read_bytes()).decode("utf-8")
                 for path in sorted((ROOT / "tests" / "fixtures" / "wikipedia" / "html").glob("*.html.gz"))]
    best = float("inf")
    sections = 0
    for _ in range(repeats):
        started = time.perf_counter()
        sections = sum(len(parse_sections(document)) for document in documents)
        best = min(best, time.perf_counter() - started)
    megabytes = sum(len(document.encode("utf-8")) for document in documents) / 1e6
    return {"pages": len(documents), "sections": sections, "seconds": best,
            "sections_per_second": sections / best, "pages_per_second": len(documents) / best,
            "megabytes_per_second": megabytes / best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1800)
    parser.add_argument("--dishes", type=int, default=200)
    parser.add_argument("--templates", type=int, default=30, help="question templates per language")
    parser.add_argument("--langs", type=int, default=9, help=f"languages besides English, at most {len(LANGS)}")
    parser.add_argument("--pages", type=int, default=3000, help="synthetic articles per wiki")
    parser.add_argument("--delay", type=float, default=0.0, help="server latency per request, seconds")
    args = parser.parse_args()

    crawl_figures = crawl(args.items, args.dishes, args.templates, args.langs, args.pages, args.delay)
    print("crawl (synthetic items against the loopback MediaWiki server)")
    for key, value in crawl_figures.items():
        print(f"  {key:36s} {value:.3f}" if isinstance(value, float) else f"  {key:36s} {value}")
    parse_figures = parse_speed()
    print("section parsing (real fixtures)")
    for key, value in parse_figures.items():
        print(f"  {key:36s} {value:.2f}" if isinstance(value, float) else f"  {key:36s} {value}")


if __name__ == "__main__":
    main()
