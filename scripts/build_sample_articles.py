"""Maintainer script: build the embedded sample's Wikipedia articles from the real fixture pages.

    python scripts/build_sample_articles.py ../shared/fixtures

writes ``corpora/sample/wikipedia/articles.parquet`` (our article schema, zstd) and its
``ATTRIBUTION.md``. It is the only code allowed to read the shared fixtures folder, and only when a
maintainer runs it; the package and the tests read the parquet it wrote.

Every id comes from the data itself — Parsoid ``mw:pageId`` / revision ``about`` URLs, the legacy
skin's ``wgArticleId`` / ``wgRevisionId`` / ``wgWikibaseItemId``, the parser-cache comment
(``idhash:<page id>`` ... ``revision id <n>``) of action=parse output, Enterprise record fields —
never invented: a page whose ids cannot be found is left out and reported. Only main-namespace
pages are kept, one revision per page (the newest), and one file per revision.
"""

from __future__ import annotations

import argparse
import html as html_lib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from m4build.sources.wikipedia.snapshot import ARTICLE_SCHEMA
from m4build.wikis import article_url, dbname

REPO_ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = REPO_ROOT / "corpora" / "sample" / "wikipedia"
ZSTD_LEVEL = 19

_PROVENANCE_ROW = re.compile(
    r"^\| `wikipedia/html/([^`]+)` \| ([^|]+) \| `([^`]+)` \| `([0-9a-f]{40})` \|(.*)$"
)
_QUOTED_TITLE = re.compile(r'\b[a-z_]+wiki "([^"]+)"')


@dataclass(frozen=True)
class Provenance:
    """Where a fixture file was copied from (one row of the fixtures' PROVENANCE.md)."""

    repo: str
    path: str
    commit: str
    description: str


@dataclass
class Page:
    """One article revision found in a fixture file, with the file it came from."""

    wiki: str
    page_id: int | None
    revision_id: int | None
    namespace: int | None
    title: str | None
    wikidata_id: str | None
    date_modified: str | None
    html: str
    file: str
    url: str | None = None


def read_provenance(fixtures: Path) -> dict[str, Provenance]:
    rows: dict[str, Provenance] = {}
    for line in (fixtures / "PROVENANCE.md").read_text(encoding="utf-8").splitlines():
        if match := _PROVENANCE_ROW.match(line):
            name, repo, path, commit, rest = match.groups()
            rows[name] = Provenance(repo.strip(), path, commit, rest.rsplit("|", 2)[-2].strip())
    return rows


def _search(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text)
    return match[1] if match else None


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None


def _utc_seconds(stamp: str | None) -> str | None:
    """Parsoid's ``2022-07-22T00:09:12.000Z`` -> ``2022-07-22T00:09:12Z``, the Enterprise form."""
    return re.sub(r"\.\d+Z$", "Z", stamp) if stamp else None


def _legacy_title(text: str) -> str | None:
    """``wgTitle`` of the skin's JS config, a JSON string."""
    raw = _search(r'"wgTitle":\s*("(?:[^"\\]|\\.)*")', text)
    return json.loads(raw) if raw else None


def _parsoid_title(text: str) -> str | None:
    """The canonical link's title, else ``<title>`` without the display-title markup."""
    href = _search(r'<link rel="dc:isVersionOf" href="//[^/]+/wiki/([^"]+)"', text)
    if href and href != "undefined":
        return unquote(href).replace("_", " ")
    title = _search(r"<title>([^<]*)</title>", text)
    return re.sub(r"<[^>]+>", "", html_lib.unescape(title)) if title else None


def page_from_html(name: str, text: str, provenance: Provenance) -> Page:
    """Ids from whichever markup the file has: Parsoid metadata, legacy JS config, parser cache."""
    # File names start with the wiki's subdomain, with the script variant for the sr files.
    wiki = dbname(re.sub(r"-(cyrl|latn)$", "", name.split("--", 1)[0]))
    quoted = _QUOTED_TITLE.search(provenance.description)
    page = Page(
        wiki=wiki,
        page_id=_int(
            _search(r'"wgArticleId":\s*(\d+)', text) or _search(r'mw:pageId" content="(\d+)"', text)
        ),
        revision_id=_int(
            _search(r'"wgRevisionId":\s*(\d+)', text) or _search(r'about="[^"]*/revision/(\d+)"', text)
        ),
        namespace=_int(
            _search(r'"wgNamespaceNumber":\s*(\d+)', text)
            or _search(r'mw:pageNamespace" content="(\d+)"', text)
        ),
        title=_legacy_title(text) or _parsoid_title(text),
        wikidata_id=_search(r'"wgWikibaseItemId":\s*"(Q\d+)"', text),
        date_modified=_utc_seconds(_search(r'<meta property="dc:modified" content="([^"]+)"', text)),
        html=text,
        file=name,
    )
    if page.page_id is None:  # action=parse output: only the parser-cache comment names the page
        cache = re.search(r"pcache:idhash:(\d+)-[^ ]* and timestamp \d+ and revision id (\d+)", text)
        if cache:
            page.page_id, page.revision_id = int(cache[1]), int(cache[2])
            page.title = quoted[1] if quoted else None
    return page


def page_from_enterprise(record: dict, name: str) -> Page:
    return Page(
        wiki=record["is_part_of"]["identifier"],
        page_id=record["identifier"],
        revision_id=record["version"]["identifier"],
        namespace=record.get("namespace", {}).get("identifier"),
        title=record["name"],
        wikidata_id=(record.get("main_entity") or {}).get("identifier"),
        date_modified=record.get("date_modified"),
        html=record["article_body"]["html"],
        file=name,
        url=record.get("url"),
    )


def read_pages(fixtures: Path, provenance: dict[str, Provenance]) -> list[Page]:
    pages: list[Page] = []
    for path in sorted((fixtures / "wikipedia" / "html").iterdir()):
        if path.name.endswith(".html"):
            pages.append(page_from_html(path.name, path.read_text(encoding="utf-8"), provenance[path.name]))
        elif path.name.endswith(".json"):
            pages.append(page_from_enterprise(json.loads(path.read_text(encoding="utf-8")), path.name))
        elif path.name.endswith(".ndjson"):
            for line in path.read_text(encoding="utf-8").splitlines():
                pages.append(page_from_enterprise(json.loads(line), path.name))
    return pages


def select(pages: list[Page]) -> tuple[list[Page], list[tuple[Page, str]]]:
    """Articles with real ids, newest revision per page, one file per revision; and what was left out."""
    left_out: list[tuple[Page, str]] = []
    newest: dict[tuple[str, int], Page] = {}
    for page in pages:
        if page.page_id is None or page.revision_id is None or not page.title:
            left_out.append((page, "no page id, revision id or title in the data"))
        elif page.namespace not in (None, 0):
            left_out.append((page, f"not an article (namespace {page.namespace})"))
        else:
            key = (page.wiki, page.page_id)
            held = newest.get(key)
            if held is None or page.revision_id > held.revision_id:
                if held is not None:
                    left_out.append(
                        (held, f"older revision of a page also held at revision {page.revision_id}")
                    )
                newest[key] = page
            else:
                left_out.append(
                    (page, f"revision {page.revision_id} of a page already held at {held.revision_id}")
                )
    return sorted(newest.values(), key=lambda p: (p.wiki, p.page_id)), left_out


def write_parquet(pages: list[Page], path: Path) -> None:
    rows = [
        {
            "wiki": p.wiki,
            "page_id": p.page_id,
            "revision_id": p.revision_id,
            "title": p.title,
            "url": p.url or article_url(p.wiki, p.title or ""),
            "wikidata_id": p.wikidata_id,
            "date_modified": p.date_modified,
            "html": p.html,
        }
        for p in pages
    ]
    table = pa.Table.from_pylist(rows, schema=ARTICLE_SCHEMA)
    pq.write_table(table, path, compression="zstd", compression_level=ZSTD_LEVEL)


def write_attribution(pages: list[Page], provenance: dict[str, Provenance], path: Path) -> None:
    lines = [
        "# Attribution: the sample's Wikipedia articles",
        "",
        "`articles.parquet` holds real Wikipedia article revisions: their HTML, unchanged (for",
        "Enterprise records, `article_body.html`), from files that public GitHub repositories keep",
        "as test data. The text is licensed under CC BY-SA (4.0; revisions saved before mid-2023",
        "under 3.0); attribution goes to the contributors of each page and revision named below,",
        "whose full history is at the URL with `?action=history`. The repositories' code licences",
        "cover their code, not this content.",
        "",
        "Built by `scripts/build_sample_articles.py` from the fixtures described in the shared",
        "fixtures' PROVENANCE.md. Ids come from the HTML itself or from the Enterprise record fields.",
        "",
        "| wiki | title | page id | revision | Wikidata | source repository | path in source | commit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in pages:
        source = provenance[p.file]
        lines.append(
            f"| {p.wiki} | [{p.title}]({p.url or article_url(p.wiki, p.title or '')}) | {p.page_id} | "
            f"{p.revision_id} | {p.wikidata_id or ''} | {source.repo} | `{source.path}` | `{source.commit}` |"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fixtures", type=Path, help="the shared fixtures folder (holds PROVENANCE.md)")
    args = parser.parse_args(argv)
    provenance = read_provenance(args.fixtures)
    kept, left_out = select(read_pages(args.fixtures, provenance))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    write_parquet(kept, OUT_DIR / "articles.parquet")
    write_attribution(kept, provenance, OUT_DIR / "ATTRIBUTION.md")
    for p in kept:
        print(
            f"kept      {p.wiki:11} {p.page_id:>9} {p.revision_id:>11} {p.wikidata_id or '-':10} {p.title}  ({p.file})"
        )
    for p, why in left_out:
        print(f"left out  {p.wiki:11} {p.file}: {why}")
    size = (OUT_DIR / "articles.parquet").stat().st_size
    print(f"{len(kept)} articles, {size:,} bytes -> {OUT_DIR / 'articles.parquet'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
