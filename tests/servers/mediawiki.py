"""A real HTTP server on 127.0.0.1 that speaks the part of the MediaWiki Action API m4build uses.

The tests cannot reach Wikipedia, and a mocked client would test nothing about the wire. So this
server answers real HTTP requests, as MediaWiki does, for several wikis at ``/{wiki}/w/api.php``:

- ``action=query&meta=siteinfo`` (what mwclient asks when it connects),
- ``action=query&generator=search`` with ``prop=info|pageprops|langlinks`` (language-link
  continuation with ``llcontinue`` when a small ``lllimit`` is exceeded, ``redirects=1``),
- ``action=query&list=search`` and ``action=query&prop=langlinks`` on ``titles``,
- ``action=parse`` by ``oldid``, ``pageid`` or ``page``,

in ``formatversion=2`` (and the legacy shape when it is not asked for), with errors in
MediaWiki's own shape. It counts requests by kind, records every request's parameters and headers,
tracks how many requests were in flight per wiki at once, and serves scripted faults: HTTP 429/5xx
with ``Retry-After``, ``maxlag`` errors (with ``Retry-After`` and ``X-Database-Lag`` as MediaWiki
sends them), hung connections, malformed or truncated bodies, answers missing their keys, and pages
that have disappeared.

Usage::

    with MediaWikiServer(load_fixture_pages()) as server:
        source = MediaWikiApiSource(ua, endpoint=server.url_template)
        server.add_faults(Fault.http(429, retry_after="2"), kind="search")
        ...
        server.stats.count(kind="parse", wiki="enwiki")
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

FIXTURE_PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "wikipedia" / "api_pages"

GENERATOR = "MediaWiki 1.44.0-wmf.25"
SERVED_BY = "mw-test1"
DOCREF = "See https://www.mediawiki.org/wiki/Special:MyLanguage/API:Main_page for API usage."
MAX_SEARCH_LIMIT = 50  # gsrlimit/srlimit maximum for clients without the apihighlimits right
MAX_LANGLINKS = 500  # lllimit=max for the same clients
RTL_LANGUAGES = frozenset({"ar", "arz", "fa", "he", "ur", "ckb", "ps", "yi"})
REDIRECT_ID_BASE = 900_000_000  # page ids given to redirect pages, far from the article ids

_NAMESPACES = {
    -2: ("Media", "Media"),
    -1: ("Special", "Special"),
    0: ("", ""),
    1: ("Talk", "Talk"),
    2: ("User", "User"),
    3: ("User talk", "User talk"),
    4: ("Project", "Wikipedia"),
    5: ("Project talk", "Wikipedia talk"),
    6: ("File", "File"),
    7: ("File talk", "File talk"),
    8: ("MediaWiki", "MediaWiki"),
    9: ("MediaWiki talk", "MediaWiki talk"),
    10: ("Template", "Template"),
    11: ("Template talk", "Template talk"),
    12: ("Help", "Help"),
    13: ("Help talk", "Help talk"),
    14: ("Category", "Category"),
    15: ("Category talk", "Category talk"),
}
_WORD = re.compile(r"\w+")


# --------------------------------------------------------------------------------------------
# What the server is given: pages and faults
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WikiPage:
    """One article of one wiki: its latest revision, older ones, and its query metadata."""

    wiki: str
    pageid: int
    revid: int
    title: str
    html: str
    wikidata_id: str | None = None
    langlinks: tuple[tuple[str, str], ...] = ()  # (language code, title)
    redirects: tuple[str, ...] = ()  # titles of redirect pages that point here
    old_revisions: Mapping[int, str] = field(default_factory=dict)  # revid -> html

    def html_of(self, revid: int) -> str | None:
        return self.html if revid == self.revid else self.old_revisions.get(revid)


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour, served instead of the normal answer to one request.

    Build them with the class methods; ``kind`` names what happens.
    """

    kind: str  # "http", "maxlag", "hang", "malformed", "truncated", "incomplete" or "missing"
    status: int = 200
    retry_after: str | None = None  # Retry-After header value, verbatim
    seconds: float = 0.0  # how long a hung connection stays silent
    lag: float = 0.0  # replication lag reported by a maxlag error

    @classmethod
    def http(cls, status: int, retry_after: str | None = None) -> Fault:
        """An HTTP error status (429, 500, 502, 503, ...) with an HTML body, as Varnish sends it."""
        return cls("http", status=status, retry_after=retry_after)

    @classmethod
    def maxlag(cls, retry_after: str | None = "5", lag: float = 7.0) -> Fault:
        """MediaWiki's ``maxlag`` error: HTTP 200, JSON error, ``Retry-After`` and ``X-Database-Lag``."""
        return cls("maxlag", retry_after=retry_after, lag=lag)

    @classmethod
    def hang(cls, seconds: float = 5.0) -> Fault:
        """Accept the request, say nothing for ``seconds``, then drop the connection."""
        return cls("hang", seconds=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        """HTTP 200 whose body is not JSON (a JSON text cut in the middle, correctly framed)."""
        return cls("malformed")

    @classmethod
    def truncated(cls) -> Fault:
        """Promise the whole body in ``Content-Length``, send half of it, close the connection."""
        return cls("truncated")

    @classmethod
    def incomplete(cls) -> Fault:
        """Well-formed JSON without the keys the request must return."""
        return cls("incomplete")

    @classmethod
    def missing(cls) -> Fault:
        """For ``action=parse``: answer as if the page or revision had been deleted."""
        return cls("missing")


@dataclass
class _FaultRule:
    faults: deque[Fault]
    kind: str | None
    wiki: str | None
    pageid: int | None

    def matches(self, kind: str, wiki: str, pageid: int | None) -> bool:
        return (
            bool(self.faults)
            and self.kind in (None, kind)
            and self.wiki in (None, wiki)
            and self.pageid in (None, pageid)
        )


# --------------------------------------------------------------------------------------------
# What the server remembers: requests and concurrency
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, for tests to assert on politeness and parameters."""

    wiki: str
    kind: str  # "siteinfo", "search", "continue", "list-search", "langlinks", "parse", ...
    params: dict[str, str]
    headers: dict[str, str]  # header names lower-cased
    fault: str | None  # the fault served, if any
    gzipped: bool  # whether the answer was gzip-compressed


class ServerStats:
    """Request log and per-wiki concurrency high-water marks, safe to read while serving."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._log: list[RecordedRequest] = []
        self._in_flight: Counter[str] = Counter()
        self._max_in_flight: Counter[str] = Counter()

    @property
    def log(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    @property
    def max_in_flight(self) -> dict[str, int]:
        """The most requests a wiki had in progress at the same time."""
        with self._lock:
            return dict(self._max_in_flight)

    def count(self, kind: str | None = None, wiki: str | None = None) -> int:
        return sum(1 for r in self.log if kind in (None, r.kind) and wiki in (None, r.wiki))

    def by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(r.kind for r in self.log).items()))

    def faults_served(self) -> dict[str, int]:
        return dict(sorted(Counter(r.fault for r in self.log if r.fault).items()))

    def reset(self) -> None:
        with self._lock:
            self._log.clear()
            self._max_in_flight.clear()

    def _enter(self, wiki: str) -> None:
        with self._lock:
            self._in_flight[wiki] += 1
            self._max_in_flight[wiki] = max(self._max_in_flight[wiki], self._in_flight[wiki])

    def _leave(self, wiki: str) -> None:
        with self._lock:
            self._in_flight[wiki] -= 1

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._log.append(request)


# --------------------------------------------------------------------------------------------
# One wiki: pages, redirects and a small search index
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    """A row of the page table: an article, a redirect to one, or a title that does not exist."""

    title: str
    pageid: int | None = None  # None for a missing title
    revid: int | None = None
    page: WikiPage | None = None  # set for articles
    target: str | None = None  # set for redirects


class _TextOf(HTMLParser):
    """Visible text of an HTML page (script and style dropped), for search scoring."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style") and self._skip > 0

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _visible_text(html: str) -> str:
    parser = _TextOf()
    parser.feed(html)
    parser.close()
    return " ".join(parser.parts)


class _Wiki:
    """The pages of one wiki with an inverted index: term -> {page id: weight}.

    Scoring is deliberately simple and deterministic: a query term in the title weighs 3, plus
    log(1 + its count in the text); hits are ordered by score, then by page id.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.lang = name[: -len("wiki")].replace("_", "-")
        self.entries: dict[int, _Entry] = {}
        self.by_title: dict[str, int] = {}
        self.page_of_revision: dict[int, int] = {}
        self._postings: defaultdict[str, dict[int, float]] = defaultdict(dict)
        self._next_redirect_id = REDIRECT_ID_BASE + 1

    def add(self, page: WikiPage) -> None:
        self.remove(page.pageid)
        self._index(_Entry(page.title, page.pageid, page.revid, page=page), _visible_text(page.html))
        for revid in (page.revid, *page.old_revisions):
            self.page_of_revision[revid] = page.pageid
        for title in page.redirects:
            redirect_id = self._next_redirect_id
            self._next_redirect_id += 1
            self._index(_Entry(title, redirect_id, redirect_id, target=page.title), "")

    def remove(self, pageid: int) -> None:
        """Delete an article and the redirects to it, as if it had been deleted on the wiki."""
        entry = self.entries.get(pageid)
        if entry is None or entry.page is None:
            return
        doomed = [pageid] + [i for i, e in self.entries.items() if e.target == entry.title]
        for doomed_id in doomed:
            gone = self.entries.pop(doomed_id)
            self.by_title.pop(gone.title, None)
            for postings in self._postings.values():
                postings.pop(doomed_id, None)
        self.page_of_revision = {r: p for r, p in self.page_of_revision.items() if p != pageid}

    def _index(self, entry: _Entry, text: str) -> None:
        assert entry.pageid is not None
        self.entries[entry.pageid] = entry
        self.by_title[entry.title] = entry.pageid
        title_terms = set(_tokens(entry.title))
        counts = Counter(_tokens(text))
        for term in title_terms | set(counts):
            self._postings[term][entry.pageid] = 3.0 * (term in title_terms) + math.log1p(counts[term])

    def search(self, query: str) -> list[_Entry]:
        scores: Counter[int] = Counter()
        for term in set(_tokens(query)):
            for pageid, weight in self._postings.get(term, {}).items():
                scores[pageid] += weight
        ranked = sorted(scores, key=lambda pageid: (-scores[pageid], pageid))
        return [self.entries[pageid] for pageid in ranked]

    def entry(self, title: str) -> _Entry:
        pageid = self.by_title.get(title.replace("_", " "))
        return self.entries[pageid] if pageid is not None else _Entry(title.replace("_", " "))


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


class _Answer:
    """What to send back: a status, headers and a JSON (or raw) body, or a fault's special way."""

    def __init__(
        self,
        body: Any,
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        self.status = status
        self.headers = dict(headers or {})
        self.raw = raw if raw is not None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.headers.setdefault("Content-Type", "application/json; charset=utf-8")


class MediaWikiServer:
    """Several wikis' Action APIs on one loopback port; start with ``with`` or ``start()``.

    ``delay`` is how long every request takes (seconds) while it counts as in flight, so tests
    can observe concurrency; ``max_langlinks`` caps language links per answer (MediaWiki's is
    500; set it small to force ``llcontinue``).
    """

    def __init__(
        self,
        pages: Iterable[WikiPage] = (),
        *,
        wikis: Iterable[str] = (),
        delay: float = 0.0,
        max_langlinks: int = MAX_LANGLINKS,
    ) -> None:
        self.delay = delay
        self.max_langlinks = max_langlinks
        self.stats = ServerStats()
        self._lock = threading.RLock()
        self._wikis: dict[str, _Wiki] = {name: _Wiki(name) for name in wikis}
        self._faults: list[_FaultRule] = []
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.add_pages(pages)

    # -- data ----------------------------------------------------------------------------

    def add_pages(self, pages: Iterable[WikiPage]) -> None:
        with self._lock:
            for page in pages:
                self._wikis.setdefault(page.wiki, _Wiki(page.wiki)).add(page)

    def delete_page(self, wiki: str, pageid: int) -> None:
        """Make a page disappear: later parses answer ``nosuchrevid``/``missingtitle``."""
        with self._lock:
            self._wikis[wiki].remove(pageid)

    def add_faults(
        self,
        *faults: Fault,
        kind: str | None = None,
        wiki: str | None = None,
        pageid: int | None = None,
    ) -> None:
        """Queue faults, served in order to the next requests that match (``None`` matches all).

        ``kind`` is a request kind as in ``RecordedRequest.kind``; ``pageid`` matches ``parse``
        requests for that page. Earlier-added queues are served first.
        """
        with self._lock:
            self._faults.append(_FaultRule(deque(faults), kind, wiki, pageid))

    def pending_faults(self) -> int:
        with self._lock:
            return sum(len(rule.faults) for rule in self._faults)

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def url_template(self) -> str:
        """Endpoint template for ``MediaWikiApiSource(endpoint=...)``: ``{wiki}`` is filled in."""
        return f"http://127.0.0.1:{self.port}/{{wiki}}/w/api.php"

    def url(self, wiki: str) -> str:
        return self.url_template.format(wiki=wiki)

    def start(self) -> MediaWikiServer:
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes hung handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> MediaWikiServer:  # noqa: PYI034 - typing.Self needs 3.11, the project targets 3.10
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- serving -------------------------------------------------------------------------

    def _take_fault(self, kind: str, wiki: str, pageid: int | None) -> Fault | None:
        with self._lock:
            for rule in self._faults:
                if rule.matches(kind, wiki, pageid):
                    return rule.faults.popleft()
        return None

    def _parse_target(self, wiki: _Wiki, params: Mapping[str, str]) -> int | None:
        with self._lock:
            return _parse_target(wiki, params)

    def _wiki(self, name: str) -> _Wiki | None:
        with self._lock:
            return self._wikis.get(name)

    def _answer(self, wiki: _Wiki, kind: str, params: dict[str, str], fault: Fault | None) -> _Answer:
        """The normal answer, or the fault's replacement for it (hangs are handled by the caller)."""
        fv2 = params.get("formatversion") == "2"
        if fault is not None and fault.kind not in ("missing", "truncated"):
            return _fault_answer(fault, kind, fv2)
        with self._lock:
            action = params.get("action")
            if action == "parse":
                body = _parse(wiki, params, missing=fault is not None and fault.kind == "missing")
            elif action == "query":
                body = _query(wiki, params, self.max_langlinks)
            else:
                body = _error("badvalue", f'Unrecognized value for parameter "action": {action}.')
        headers = {"MediaWiki-API-Error": body["error"]["code"]} if "error" in body else {}
        return _Answer(body if fv2 else _to_formatversion1(body), headers=headers)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a hung handler must not hold up stop()

    def __init__(self, address: tuple[str, int], handler: type, mediawiki: MediaWikiServer) -> None:
        super().__init__(address, handler)
        self.mediawiki = mediawiki


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API; every answer has Content-Length
    disable_nagle_algorithm = True  # headers and body go out in two writes; don't wait for an ACK
    server: _HTTPServer

    def do_GET(self) -> None:
        self._handle(self._params(""))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._handle(self._params(self.rfile.read(length).decode("utf-8")))

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines, which would drown test output."""

    def _params(self, body: str) -> dict[str, str]:
        query = urlsplit(self.path).query
        merged = {**parse_qs(query, keep_blank_values=True), **parse_qs(body, keep_blank_values=True)}
        return {key: values[0] for key, values in merged.items()}

    def _handle(self, params: dict[str, str]) -> None:
        mw = self.server.mediawiki
        match = re.fullmatch(r"/([a-z0-9_]+)/w/api\.php", urlsplit(self.path).path)
        wiki = mw._wiki(match.group(1)) if match else None
        if wiki is None:
            self._write(404, {"Content-Type": "text/html"}, b"<h1>Not Found</h1>", truncate=False)
            return
        kind = request_kind(params)
        fault = mw._take_fault(kind, wiki.name, mw._parse_target(wiki, params) if kind == "parse" else None)
        mw.stats._enter(wiki.name)
        if fault is not None and fault.kind == "hang":
            mw.stats._leave(wiki.name)  # the client gives up on it; it no longer holds a slot
            self._record(wiki.name, kind, params, fault, gzipped=False)
            mw._stopping.wait(fault.seconds)
            self.close_connection = True
            return
        try:
            if mw.delay:
                mw._stopping.wait(mw.delay)
            answer = mw._answer(wiki, kind, params, fault)
        finally:
            mw.stats._leave(wiki.name)  # before writing: the server never over-counts the client
        body, headers = answer.raw, answer.headers
        gzipped = "gzip" in self.headers.get("Accept-Encoding", "")
        if gzipped:
            body = gzip.compress(body, mtime=0)
            headers = {**headers, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
        self._record(wiki.name, kind, params, fault, gzipped)
        self._write(answer.status, headers, body, truncate=fault is not None and fault.kind == "truncated")

    def _record(
        self, wiki: str, kind: str, params: dict[str, str], fault: Fault | None, gzipped: bool
    ) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        recorded = RecordedRequest(wiki, kind, params, headers, fault.kind if fault else None, gzipped)
        self.server.mediawiki.stats._record(recorded)

    def _write(self, status: int, headers: Mapping[str, str], body: bytes, *, truncate: bool) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2] if truncate else body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. it timed out); nothing to do
        if truncate:
            self.close_connection = True


def request_kind(params: Mapping[str, str]) -> str:
    """How the server (and the client's statistics) name a request."""
    action = params.get("action", "")
    if action != "query":
        return action or "none"
    if "siteinfo" in params.get("meta", "").split("|"):
        return "siteinfo"
    if params.get("generator") == "search":
        prop_continues = any(k.endswith("continue") and k not in ("continue", "gsrcontinue") for k in params)
        return "continue" if prop_continues else "search"
    if params.get("list") == "search":
        return "list-search"
    if "langlinks" in params.get("prop", "").split("|"):
        return "langlinks"
    return "query"


# --------------------------------------------------------------------------------------------
# Answers, in MediaWiki's shapes (formatversion=2 first; _to_formatversion1 for the legacy one)
# --------------------------------------------------------------------------------------------


def _error(code: str, info: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "info": info, **extra, "docref": DOCREF}, "servedby": SERVED_BY}


def _fault_answer(fault: Fault, kind: str, fv2: bool) -> _Answer:
    if fault.kind == "http":
        headers = {"Content-Type": "text/html; charset=utf-8"}
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        page = f"<!DOCTYPE html><html><title>Wikimedia Error</title><p>Error {fault.status}</p></html>"
        return _Answer(None, status=fault.status, headers=headers, raw=page.encode())
    if fault.kind == "maxlag":
        body = _error(
            "maxlag",
            f"Waiting for 10.64.16.8: {fault.lag:g} seconds lagged.",
            host="10.64.16.8",
            lag=fault.lag,
            type="db",
        )
        headers = {"X-Database-Lag": str(int(fault.lag)), "MediaWiki-API-Error": "maxlag"}
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        return _Answer(body if fv2 else _to_formatversion1(body), headers=headers)
    if fault.kind == "malformed":
        return _Answer(None, raw=b'{"batchcomplete":true,"query":{"pages":[{"pageid":12,"ns":0,"tit')
    if fault.kind == "incomplete":
        return _Answer({"parse": {"title": "Incomplete", "pageid": 0}} if kind == "parse" else {"query": {}})
    raise ValueError(f"fault {fault.kind!r} does not replace the answer")


def _siteinfo(wiki: _Wiki, params: Mapping[str, str]) -> dict[str, Any]:
    general = {
        "mainpage": "Main Page",
        "base": f"https://{wiki.lang}.wikipedia.org/wiki/Main_Page",
        "sitename": "Wikipedia",
        "generator": GENERATOR,
        "phpversion": "8.1.31",
        "dbtype": "mysql",
        "lang": wiki.lang,
        "case": "first-letter",
        "rtl": wiki.lang in RTL_LANGUAGES,
        "wikiid": wiki.name,
        "server": f"//{wiki.lang}.wikipedia.org",
        "servername": f"{wiki.lang}.wikipedia.org",
        "articlepath": "/wiki/$1",
        "scriptpath": "/w",
        "maxarticlesize": 2097152,
    }
    namespaces = {
        str(ns): {"id": ns, "case": "first-letter", "name": local, "canonical": canonical}
        for ns, (canonical, local) in _NAMESPACES.items()
    }
    query: dict[str, Any] = {"general": general, "namespaces": namespaces}
    if "userinfo" in params.get("meta", "").split("|"):
        query["userinfo"] = {"id": 0, "name": "127.0.0.1", "anon": True}
    return {"batchcomplete": True, "query": query}


def _limit(value: str | None, default: int, maximum: int) -> int:
    if value is None:
        return default
    return maximum if value == "max" else max(1, min(int(value), maximum))


def _query(wiki: _Wiki, params: Mapping[str, str], max_langlinks: int) -> dict[str, Any]:
    if "siteinfo" in params.get("meta", "").split("|"):
        return _siteinfo(wiki, params)
    if params.get("list") == "search":
        return _list_search(wiki, params)
    rows, generator_next = _page_set(wiki, params)
    redirects: list[dict[str, Any]] = []
    if params.get("redirects") not in (None, "0", "false"):
        rows, redirects = _resolve_redirects(wiki, rows)
    props = set(params.get("prop", "").split("|")) - {""}
    pages = [_page_row(wiki, entry, index, props, params) for entry, index in rows]
    llcontinue = _add_langlinks(pages, rows, params, max_langlinks) if "langlinks" in props else None
    answer: dict[str, Any] = {}
    if llcontinue is not None:
        kept = {k: int(params[k]) for k in ("gsroffset",) if k in params}
        finished = "|".join(sorted(props - {"langlinks"}))
        answer["continue"] = {"llcontinue": llcontinue, **kept, "continue": f"{'|'.join(kept)}||{finished}"}
    else:
        answer["batchcomplete"] = True
        if generator_next is not None:
            answer["continue"] = {"gsroffset": generator_next, "continue": "-||"}
    query: dict[str, Any] = {}
    if redirects:
        query["redirects"] = redirects
    if pages:
        query["pages"] = pages
    if query:
        answer["query"] = query
    return answer


def _page_set(wiki: _Wiki, params: Mapping[str, str]) -> tuple[list[tuple[_Entry, int | None]], int | None]:
    """The pages a query is about, with their search position, and the next search offset."""
    if params.get("generator") == "search":
        limit = _limit(params.get("gsrlimit"), 10, MAX_SEARCH_LIMIT)
        offset = int(params.get("gsroffset", "0"))
        ranked = wiki.search(params.get("gsrsearch", ""))  # every page held is in namespace 0
        window = ranked[offset : offset + limit]
        more = offset + limit if len(ranked) > offset + limit else None
        return [(entry, offset + i + 1) for i, entry in enumerate(window)], more
    if "titles" in params:
        return [(wiki.entry(title), None) for title in params["titles"].split("|")], None
    return [], None


def _resolve_redirects(
    wiki: _Wiki, rows: list[tuple[_Entry, int | None]]
) -> tuple[list[tuple[_Entry, int | None]], list[dict[str, Any]]]:
    """Replace redirects by their targets (a target keeps the best search position)."""
    resolved: dict[str, tuple[_Entry, int | None]] = {}
    redirects = []
    for entry, index in rows:
        if entry.target is not None:
            redirect = {"from": entry.title, "to": entry.target}
            redirects.append(redirect if index is None else {"index": index, **redirect})
            entry = wiki.entry(entry.target)
        seen = resolved.get(entry.title)
        if seen is not None and seen[1] is not None and (index is None or seen[1] < index):
            index = seen[1]
        resolved[entry.title] = (entry, index)
    return list(resolved.values()), redirects


def _page_row(
    wiki: _Wiki, entry: _Entry, index: int | None, props: set[str], params: Mapping[str, str]
) -> dict[str, Any]:
    if entry.pageid is None:
        return {"ns": 0, "title": entry.title, "missing": True}
    row: dict[str, Any] = {"pageid": entry.pageid, "ns": 0, "title": entry.title}
    if index is not None:
        row["index"] = index
    if "info" in props:
        row.update(
            contentmodel="wikitext",
            pagelanguage=wiki.lang,
            pagelanguagehtmlcode=wiki.lang,
            pagelanguagedir="rtl" if wiki.lang in RTL_LANGUAGES else "ltr",
            touched="2025-04-01T00:00:00Z",
            lastrevid=entry.revid,
            length=len(entry.page.html) if entry.page else len(f"#REDIRECT [[{entry.target}]]"),
        )
        if entry.target is not None:
            row["redirect"] = True
    wanted = set(params.get("ppprop", "wikibase_item").split("|"))
    if "pageprops" in props and entry.page and entry.page.wikidata_id and "wikibase_item" in wanted:
        row["pageprops"] = {"wikibase_item": entry.page.wikidata_id}
    return row


def _add_langlinks(
    pages: list[dict[str, Any]],
    rows: list[tuple[_Entry, int | None]],
    params: Mapping[str, str],
    max_langlinks: int,
) -> str | None:
    """Attach language links in (page id, language) order, at most ``lllimit``; say where to go on."""
    links = sorted(
        (entry.pageid, lang, title)
        for entry, _ in rows
        if entry.page is not None and entry.pageid is not None
        for lang, title in entry.page.langlinks
    )
    if "llcontinue" in params:
        pageid, lang = params["llcontinue"].split("|", 1)
        links = [link for link in links if (link[0], link[1]) >= (int(pageid), lang)]
    limit = _limit(params.get("lllimit"), 10, max_langlinks)
    by_page = {row["pageid"]: row for row in pages if "pageid" in row}
    for pageid, lang, title in links[:limit]:
        by_page[pageid].setdefault("langlinks", []).append({"lang": lang, "title": title})
    if len(links) > limit:
        pageid, lang, _ = links[limit]
        return f"{pageid}|{lang}"
    return None


def _list_search(wiki: _Wiki, params: Mapping[str, str]) -> dict[str, Any]:
    limit = _limit(params.get("srlimit"), 10, MAX_SEARCH_LIMIT)
    offset = int(params.get("sroffset", "0"))
    ranked = [e.page for e in wiki.search(params.get("srsearch", "")) if e.page is not None]
    hits = [
        {"ns": 0, "title": page.title, "pageid": page.pageid, "size": len(page.html), "snippet": ""}
        for page in ranked[offset : offset + limit]
    ]
    answer: dict[str, Any] = {
        "batchcomplete": True,
        "query": {"searchinfo": {"totalhits": len(ranked)}, "search": hits},
    }
    if len(ranked) > offset + limit:
        answer["continue"] = {"sroffset": offset + limit, "continue": "-||"}
    return answer


def _parse_target(wiki: _Wiki, params: Mapping[str, str]) -> int | None:
    """The page id an ``action=parse`` request is about, if the wiki has it."""
    if "oldid" in params:
        return wiki.page_of_revision.get(int(params["oldid"]))
    if "pageid" in params:
        return int(params["pageid"])
    if "page" in params:
        return wiki.entry(params["page"]).pageid
    return None


def _parse(wiki: _Wiki, params: Mapping[str, str], *, missing: bool) -> dict[str, Any]:
    """``action=parse`` of a revision (``oldid``), a page id or a title; ``missing`` fakes a deletion."""
    if "oldid" in params:
        revid = int(params["oldid"])
        pageid = None if missing else wiki.page_of_revision.get(revid)
        if pageid is None:
            return _error("nosuchrevid", f"There is no revision with ID {revid}.")
    elif "pageid" in params:
        pageid = None if missing else int(params["pageid"])
        if pageid not in wiki.entries:
            return _error("nosuchpageid", f"There is no page with ID {params['pageid']}.")
    else:
        pageid = None if missing else wiki.entry(params.get("page", "")).pageid
        if pageid is None:
            return _error("missingtitle", "The page you specified doesn't exist.")
    entry = wiki.entries[pageid]
    if entry.target is not None and params.get("redirects"):
        entry = wiki.entry(entry.target)
    page = entry.page
    if page is None:
        return _error("missingtitle", "The page you specified doesn't exist.")
    revid = int(params["oldid"]) if "oldid" in params else page.revid
    html = page.html_of(revid)
    if html is None:
        return _error("nosuchrevid", f"There is no revision with ID {revid}.")
    parsed: dict[str, Any] = {"title": page.title, "pageid": page.pageid, "revid": revid, "text": html}
    if "displaytitle" in params.get("prop", "").split("|"):
        parsed["displaytitle"] = f'<span class="mw-page-title-main">{page.title}</span>'
    return {"parse": parsed}


def _to_formatversion1(answer: dict[str, Any]) -> dict[str, Any]:
    """The legacy JSON shape (what mwclient's own calls get): pages keyed by id, ``*`` for
    content and names, ``""`` for true, false flags left out."""
    answer = _legacy_flags(answer)
    if "error" in answer:
        answer["error"]["*"] = answer["error"].pop("docref")
    if "parse" in answer and "text" in answer["parse"]:
        answer["parse"]["text"] = {"*": answer["parse"]["text"]}
    query = answer.get("query", {})
    for namespace in query.get("namespaces", {}).values():
        namespace["*"] = namespace.pop("name")
    if "pages" in query:
        for page in query["pages"]:
            for link in page.get("langlinks", []):
                link["*"] = link.pop("title")
        query["pages"] = {str(page.get("pageid", -1 - i)): page for i, page in enumerate(query["pages"])}
    return answer


def _legacy_flags(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("" if v is True else _legacy_flags(v)) for k, v in value.items() if v is not False}
    if isinstance(value, list):
        return [_legacy_flags(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# Page sets: the real fixture pages, and synthetic ones for benchmarks
# --------------------------------------------------------------------------------------------


def load_fixture_pages(folder: Path = FIXTURE_PAGES) -> list[WikiPage]:
    """The real Wikipedia pages described by ``folder/pages.json`` (see its ATTRIBUTION.md)."""
    pages = []
    for item in json.loads((folder / "pages.json").read_text(encoding="utf-8")):
        html = gzip.decompress((folder / item["file"]).read_bytes()).decode("utf-8")
        pages.append(
            WikiPage(
                wiki=item["wiki"],
                pageid=item["pageid"],
                revid=item["revid"],
                title=item["title"],
                html=html,
                wikidata_id=item["wikidata_id"],
                langlinks=tuple(sorted((lang, title) for lang, title in item["langlinks"])),
                redirects=tuple(item["redirects"]),
            )
        )
    return pages


_SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ra",
    "tu",
    "se",
    "no",
    "vi",
    "da",
    "pe",
    "zu",
    "ko",
    "la",
    "ni",
    "sho",
    "ber",
    "tan",
    "gol",
    "mar",
    "ris",
    "ve",
    "qua",
    "fen",
    "dri",
    "ul",
    "om",
    "ash",
    "tor",
)
_HEADINGS = ("History", "Ingredients", "Preparation", "Variants", "Cultural significance")


def _pseudo_words(rng: random.Random, count: int) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))))
    return sorted(words)


def synthetic_pages(
    n: int, *, wikis: Iterable[str] = ("enwiki",), seed: int = 0, words_per_section: int = 60
) -> list[WikiPage]:
    """``n`` articles per wiki with seeded pseudo-word titles and text, for benchmarks.

    Article ``i`` exists in every wiki with the same title and Wikidata id and language links to
    the others, and is written in MediaWiki 1.43+ ``action=parse`` markup (``div.mw-heading``).
    """
    rng = random.Random(seed)
    vocabulary = _pseudo_words(rng, 3000)
    titles: list[str] = []
    seen: set[str] = set()
    while len(titles) < n:
        title = " ".join(rng.choice(vocabulary).capitalize() for _ in range(2))
        if title not in seen:
            seen.add(title)
            titles.append(title)
    wiki_names = list(wikis)
    pages = []
    for w, wiki in enumerate(wiki_names):
        lang = wiki[: -len("wiki")].replace("_", "-")
        others = [o[: -len("wiki")].replace("_", "-") for o in wiki_names if o != wiki]
        for i, title in enumerate(titles):
            body = "".join(
                f'<div class="mw-heading mw-heading2"><h2 id="{h.replace(" ", "_")}">{h}</h2></div>'
                f"<p>{' '.join(rng.choices(vocabulary, k=words_per_section))}.</p>"
                for h in rng.sample(_HEADINGS, 3)
            )
            lead = f"<p><b>{title}</b> is {' '.join(rng.choices(vocabulary, k=words_per_section))}.</p>"
            html = f'<div class="mw-content-ltr mw-parser-output" lang="{lang}" dir="ltr">{lead}{body}</div>'
            pages.append(
                WikiPage(
                    wiki=wiki,
                    pageid=i + 1,
                    revid=1_000_000 * (w + 1) + i,
                    title=title,
                    html=html,
                    wikidata_id=f"Q{90_000_000 + i}",
                    langlinks=tuple(sorted((other, title) for other in others)),
                )
            )
    return pages
