"""The live Wikipedia source: the MediaWiki Action API through mwclient, politely.

Two kinds of request do all the work. A search is one ``generator=search`` query that also asks
for ``info|pageprops|langlinks``, so page id, latest revision, Wikidata id and language links of up
to 50 hits come back together (only language links may need continuation requests). Content is
one ``action=parse`` per unique (wiki, page, revision), asked for by revision id so that the HTML
is exactly the revision the search saw.

Politeness (DESIGN.md, principle 4) is ours, not mwclient's: mwclient is told to retry nothing
and every retry, wait and timeout is decided here, so the policy is exact and testable:

- the User-Agent is the one given (see ``politeness.build_user_agent``), sent on every request;
- ``maxlag`` is a session parameter, so it rides on every request, mwclient's own included;
- at most ``max_concurrency_per_wiki`` requests are in flight per wiki, across all threads;
- 429, 5xx, ``maxlag``, timeouts, broken connections and garbled answers are retried with
  capped, fully jittered exponential backoff that never waits less than ``Retry-After``;
- gzip is asked for (mwclient sends ``Accept-Encoding: gzip``; requests decodes it).

Nothing is lost: ``fetch`` yields exactly one ``Article`` or ``FetchFailure`` per requested page,
and ``search`` returns hits or raises ``SearchFailed``; both count what happened in ``stats``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar
from urllib.parse import urlsplit

import mwclient
import mwclient.errors
import requests
from requests.adapters import HTTPAdapter

from m4build.backoff import Backoff, retry_after_seconds
from m4build.errors import ConfigError
from m4build.records import Article, FetchFailure, PageHit, PageRef
from m4build.sources.wikipedia.base import SearchFailed, SourceStats
from m4build.wikis import article_url, subdomain

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://{subdomain}.wikipedia.org/w/api.php"
MAX_SEARCH_HITS = 50  # gsrlimit maximum for clients without the apihighlimits right

MISSING_CODES = frozenset({"missingtitle", "nosuchrevid", "nosuchpageid"})
"""API error codes that mean the page or revision is gone: permanent, reported as ``missing``."""

TRANSIENT_CODES = frozenset({"maxlag", "ratelimited", "readonly", "internal_api_error_DBConnectionError"})
"""API error codes worth retrying: the request was fine, the wiki was not ready for it."""

_T = TypeVar("_T")


class _Problem(Exception):
    """Why a request gave no usable answer, and whether asking again may help."""

    def __init__(
        self, reason: str, detail: str = "", *, retryable: bool = True, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after
        self.attempts = 1


@dataclass
class _Wiki:
    """One wiki's connection: its mwclient Site, its request slots, and whether it is set up."""

    site: mwclient.Site
    session: requests.Session
    slots: threading.BoundedSemaphore
    setup_lock: threading.Lock = field(default_factory=threading.Lock)
    ready: bool = False


class MediaWikiApiSource:
    """``WikipediaSource`` over the live MediaWiki Action API (``--source api``).

    ``endpoint`` is a template filled with ``{subdomain}`` ("zh-yue") and ``{wiki}`` ("zh_yuewiki");
    tests point it at a local server. ``max_retries`` counts retries after the first attempt.
    ``variant_of`` maps a wiki to the language variant its HTML is rendered in (e.g.
    ``{"zhwiki": "zh-cn"}``). ``sleep`` and ``rng`` are injectable so that tests see every wait
    without waiting.

    ``stats`` keys: ``requests.<kind>`` (kind: siteinfo, search, continue, parse) for every HTTP
    request sent, ``retries.<reason>``, ``failures.search.<reason>``, ``failures.fetch.<reason>``
    and ``fetched``.
    """

    name = "api"

    def __init__(
        self,
        user_agent: str,
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        max_concurrency_per_wiki: int = 3,
        timeout: float = 30.0,
        max_retries: int = 6,
        backoff_base: float = 1.0,
        backoff_cap: float = 60.0,
        maxlag: int = 5,
        variant_of: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not user_agent.strip():
            raise ConfigError(
                "The live Wikipedia source needs a User-Agent with contact details.",
                "Build one with m4build.sources.wikipedia.politeness.build_user_agent(contact).",
            )
        _check_endpoint(endpoint)
        if max_concurrency_per_wiki < 1 or max_retries < 0 or timeout <= 0:
            raise ValueError("need max_concurrency_per_wiki >= 1, max_retries >= 0 and timeout > 0")
        self.user_agent = user_agent
        self.endpoint = endpoint
        self.max_concurrency_per_wiki = max_concurrency_per_wiki
        self.timeout = timeout
        self.max_retries = max_retries
        self.maxlag = maxlag
        self.variant_of = dict(variant_of or {})
        self.stats = SourceStats()
        self._backoff = Backoff(backoff_base, backoff_cap, rng)
        self._sleep = sleep
        self._wikis: dict[str, _Wiki] = {}
        self._wikis_lock = threading.Lock()
        self._last = threading.local()  # the last HTTP response this thread received

    # -- the WikipediaSource interface ------------------------------------------------------

    def search(self, wiki: str, query: str, k: int) -> list[PageHit]:
        """The top ``k`` (1..50) main-namespace articles for ``query``, with ids and links."""
        if not 1 <= k <= MAX_SEARCH_HITS:
            raise ValueError(f"k must be between 1 and {MAX_SEARCH_HITS}, got {k}")
        params = {
            "action": "query",
            "generator": "search",
            "gsrsearch": query,
            "gsrnamespace": 0,
            "gsrlimit": k,
            "prop": "info|pageprops|langlinks",
            "ppprop": "wikibase_item",
            "lllimit": "max",
            "redirects": 1,
            "formatversion": 2,
        }
        try:
            connection = self._ready(wiki)
            found = _Found()
            kind = "search"
            while True:
                answer = self._call(connection, kind, params, _read_query)
                found.add(answer)
                more = _prop_continuation(answer)
                if more is None:
                    break
                params, kind = {**params, **more}, "continue"
        except _Problem as problem:
            self.stats.update(f"failures.search.{problem.reason}")
            raise SearchFailed(wiki, query, problem.reason, problem.detail, problem.attempts) from None
        return found.hits(wiki, k)

    def fetch(self, wiki: str, pages: Sequence[PageRef]) -> Iterator[Article | FetchFailure]:
        """The HTML of each requested revision, fetched concurrently within the per-wiki limit.

        Requests for the same (page, revision) are fetched and yielded once.
        """
        unique: dict[tuple[int, int], PageRef] = {}
        for ref in pages:
            unique.setdefault((ref.page_id, ref.revision_id), ref)
        if not unique:
            return
        try:
            connection = self._ready(wiki)
        except _Problem as problem:
            for ref in unique.values():
                yield self._failure(wiki, ref, problem)
            return
        executor = ThreadPoolExecutor(
            max_workers=min(self.max_concurrency_per_wiki, len(unique)), thread_name_prefix=f"fetch-{wiki}"
        )
        try:
            futures = [executor.submit(self._fetch_one, connection, wiki, ref) for ref in unique.values()]
            for future in as_completed(futures):
                yield future.result()
        finally:
            executor.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        with self._wikis_lock:
            for connection in self._wikis.values():
                connection.session.close()
            self._wikis.clear()

    # -- fetching one page ----------------------------------------------------------------------

    def _fetch_one(self, connection: _Wiki, wiki: str, ref: PageRef) -> Article | FetchFailure:
        params: dict[str, Any] = {
            "action": "parse",
            "oldid": ref.revision_id,
            "prop": "text|revid",
            "formatversion": 2,
            "disableeditsection": 1,
            "disablelimitreport": 1,
            "disabletoc": 1,
        }
        if wiki in self.variant_of:
            params["variant"] = self.variant_of[wiki]
        try:
            parsed = self._call(connection, "parse", params, lambda answer: _read_parse(answer, ref))
        except _Problem as problem:
            return self._failure(wiki, ref, problem)
        except Exception as exc:  # a bug must not cost the other pages of the batch their records
            log.exception("unexpected error fetching %s revision %s", wiki, ref.revision_id)
            return self._failure(wiki, ref, _Problem("internal-error", f"{type(exc).__name__}: {exc}"))
        self.stats.update("fetched")
        return Article(
            wiki=wiki,
            page_id=ref.page_id,
            revision_id=ref.revision_id,
            title=parsed["title"],
            url=article_url(wiki, parsed["title"]),
            html=parsed["text"],
            retrieved_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            source=self.name,
        )

    def _failure(self, wiki: str, ref: PageRef, problem: _Problem) -> FetchFailure:
        self.stats.update(f"failures.fetch.{problem.reason}")
        return FetchFailure(
            wiki, ref.page_id, ref.revision_id, ref.title, problem.reason, problem.detail, problem.attempts
        )

    # -- connections ----------------------------------------------------------------------------

    def _ready(self, wiki: str) -> _Wiki:
        """The wiki's connection, set up once (mwclient's siteinfo call) under the retry policy."""
        connection = self._connection(wiki)
        with connection.setup_lock:
            if not connection.ready:
                self._retried(connection, "siteinfo", _site_init, lambda answer: answer)
                connection.ready = True
        return connection

    def _connection(self, wiki: str) -> _Wiki:
        with self._wikis_lock:
            if wiki not in self._wikis:
                self._wikis[wiki] = self._connect(wiki)
            return self._wikis[wiki]

    def _connect(self, wiki: str) -> _Wiki:
        """An mwclient Site on our own session: our User-Agent, maxlag, pool size and no retries."""
        url = urlsplit(self.endpoint.format(wiki=wiki, subdomain=subdomain(wiki)))
        session = requests.Session()
        session.headers["User-Agent"] = self.user_agent
        session.params = {"maxlag": str(self.maxlag)}
        session.hooks["response"].append(self._remember)
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=self.max_concurrency_per_wiki, max_retries=0)
        session.mount(f"{url.scheme}://", adapter)
        site = mwclient.Site(
            url.netloc,
            path=url.path[: -len("api.php")],
            scheme=url.scheme,
            pool=session,
            max_retries=0,
            retry_timeout=0,
            connection_options={"timeout": self.timeout},
            force_login=False,
            do_init=False,
        )
        return _Wiki(site, session, threading.BoundedSemaphore(self.max_concurrency_per_wiki))

    def _remember(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        """Response hook: keep this thread's last response, whose headers mwclient may swallow."""
        self._last.response = response

    # -- one call, retried --------------------------------------------------------------------

    def _call(
        self,
        connection: _Wiki,
        kind: str,
        params: Mapping[str, Any],
        read: Callable[[Mapping[str, Any]], _T],
    ) -> _T:
        """Send one API request until it gives a usable answer, sleeping between attempts
        outside the wiki's request slots."""
        action, rest = params["action"], {k: v for k, v in params.items() if k != "action"}
        return self._retried(
            connection, kind, lambda site: site.raw_api(action, "GET", retry_on_error=False, **rest), read
        )

    def _retried(
        self,
        connection: _Wiki,
        kind: str,
        send: Callable[[mwclient.Site], Mapping[str, Any]],
        read: Callable[[Mapping[str, Any]], _T],
    ) -> _T:
        retry = 0
        while True:
            try:
                return read(self._exchange(connection, kind, send))
            except _Problem as problem:
                problem.attempts = retry + 1
                if not problem.retryable or retry >= self.max_retries:
                    raise
                retry += 1
                self.stats.update(f"retries.{problem.reason}")
                wait = self._backoff.delay(retry, problem.retry_after)
                log.debug("%s on %s: %s; retry %d in %.1fs", kind, connection.site.host, problem, retry, wait)
                self._sleep(wait)

    def _exchange(
        self, connection: _Wiki, kind: str, send: Callable[[mwclient.Site], Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        """One HTTP request in one of the wiki's slots; any way it can go wrong becomes a _Problem."""
        self._last.response = None
        with connection.slots:
            self.stats.update(f"requests.{kind}")
            try:
                answer = send(connection.site)
            except (
                requests.RequestException,
                mwclient.errors.MwClientError,
                KeyError,
                TypeError,
                ValueError,
            ) as exc:
                raise self._problem(exc) from exc
        if "error" in answer:
            raise self._api_problem(answer["error"])
        return answer

    def _problem(self, exc: Exception) -> _Problem:
        """Classify a failed exchange (the thread's last response tells what mwclient hid)."""
        response: requests.Response | None = self._last.response
        if (
            response is not None
            and "X-Database-Lag" in response.headers
            and not isinstance(exc, requests.RequestException)
        ):
            # mwclient saw MediaWiki's maxlag headers and gave up (no retries allowed) or could
            # not read a Retry-After given as an HTTP date.
            return _Problem(
                "maxlag", f"lag {response.headers['X-Database-Lag']}s", retry_after=_retry_after(response)
            )
        if isinstance(exc, requests.Timeout):
            return _Problem("timeout", f"no answer within {self.timeout:g}s")
        if isinstance(exc, requests.HTTPError) and exc.response is not None:
            status = exc.response.status_code
            retryable = status == 429 or status >= 500
            return _Problem(
                f"http-{status}",
                exc.response.reason,
                retryable=retryable,
                retry_after=_retry_after(exc.response),
            )
        if isinstance(
            exc, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError)
        ):
            return _Problem("truncated", str(exc))
        if isinstance(exc, requests.RequestException):
            return _Problem("connection", str(exc))
        if isinstance(exc, mwclient.errors.InvalidResponse):
            return _Problem("malformed-json", "the answer is not JSON")
        if isinstance(exc, mwclient.errors.APIError):
            return self._api_problem({"code": exc.code, "info": exc.info})
        if isinstance(exc, (mwclient.errors.MediaWikiVersionError, mwclient.errors.APIDisabledError)):
            return _Problem("not-mediawiki", str(exc), retryable=False)
        return _Problem("unexpected-answer", f"{type(exc).__name__}: {exc}")

    def _api_problem(self, error: Mapping[str, Any]) -> _Problem:
        code = str(error.get("code", "unknown"))
        info = str(error.get("info", ""))
        if code in MISSING_CODES:
            return _Problem("missing", f"{code}: {info}", retryable=False)
        if code in TRANSIENT_CODES or code.startswith("internal_api_error"):
            response = self._last.response
            return _Problem(code, info, retry_after=_retry_after(response) if response is not None else None)
        return _Problem(f"api-{code}", info, retryable=False)


# -- reading answers -----------------------------------------------------------------------------


def _check_endpoint(endpoint: str) -> None:
    try:
        url = urlsplit(endpoint.format(wiki="enwiki", subdomain="en"))
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"Bad API endpoint template {endpoint!r}: {exc}.",
            "Use {subdomain} and/or {wiki}, e.g. https://{subdomain}.wikipedia.org/w/api.php",
        ) from None
    if url.scheme not in ("http", "https") or not url.netloc or not url.path.endswith("/api.php"):
        raise ConfigError(
            f"Bad API endpoint template {endpoint!r}: expected an http(s) URL ending in /api.php.",
            "For example https://{subdomain}.wikipedia.org/w/api.php",
        )


def _site_init(site: mwclient.Site) -> Mapping[str, Any]:
    """mwclient's own setup request (siteinfo; it checks the server is MediaWiki >= 1.16)."""
    site.site_init()
    return {"query": {"general": site.site}}


def _retry_after(response: requests.Response) -> float | None:
    return retry_after_seconds(response.headers.get("Retry-After"))


def _garbled(what: str) -> _Problem:
    return _Problem("unexpected-answer", what)


def _read_query(answer: Mapping[str, Any]) -> Mapping[str, Any]:
    """Check a ``generator=search`` answer has the shape MediaWiki always gives it.

    A finished answer has ``batchcomplete`` or ``continue`` (no hits: neither ``query`` nor pages);
    every page that exists has an integer id and revision.
    """
    if "batchcomplete" not in answer and "continue" not in answer:
        raise _garbled("neither batchcomplete nor continue in the search answer")
    pages = answer.get("query", {}).get("pages", [])
    if not isinstance(pages, list):
        raise _garbled("query.pages is not a list (formatversion=2 ignored?)")
    for page in pages:
        if page.get("missing") or page.get("invalid"):
            continue
        if not isinstance(page.get("pageid"), int) or not isinstance(page.get("lastrevid"), int):
            raise _garbled(f"page without pageid/lastrevid: {str(page)[:200]}")
    return answer


def _read_parse(answer: Mapping[str, Any], ref: PageRef) -> Mapping[str, Any]:
    parsed = answer.get("parse")
    if not isinstance(parsed, Mapping) or not isinstance(parsed.get("text"), str):
        raise _garbled("no parse.text in the parse answer")
    if parsed.get("revid") != ref.revision_id:
        raise _garbled(f"asked for revision {ref.revision_id}, got {parsed.get('revid')}")
    if not isinstance(parsed.get("title"), str):
        raise _garbled("no parse.title in the parse answer")
    return parsed


def _prop_continuation(answer: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``continue`` block if properties (language links) are unfinished, else None.

    Generator keys (``gsroffset``) alone would fetch the next page of hits, which is not wanted:
    ``k`` hits were asked for and all of them are in this batch.
    """
    more = answer.get("continue")
    if not more:
        return None
    unfinished = [key for key in more if key != "continue" and not key.startswith("gsr")]
    return dict(more) if unfinished else None


class _Found:
    """Search hits merged over continuation answers (each repeats the pages, with more links)."""

    def __init__(self) -> None:
        self.pages: dict[int, dict[str, Any]] = {}
        self.redirect_index: dict[str, int] = {}

    def add(self, answer: Mapping[str, Any]) -> None:
        query = answer.get("query", {})
        for redirect in query.get("redirects", []):
            if isinstance(redirect.get("index"), int):
                best = self.redirect_index.get(redirect["to"], redirect["index"])
                self.redirect_index[redirect["to"]] = min(best, redirect["index"])
        for page in query.get("pages", []):
            if page.get("missing") or page.get("invalid") or page.get("ns", 0) != 0:
                continue
            seen = self.pages.setdefault(page["pageid"], {**page, "langlinks": []})
            seen["langlinks"] += page.get("langlinks", [])
            if isinstance(page.get("index"), int):
                seen["index"] = min(seen.get("index", page["index"]), page["index"])

    def hits(self, wiki: str, k: int) -> list[PageHit]:
        """Best first by search position (a redirect's position for its target), then page id."""

        def position(page: dict[str, Any]) -> tuple[bool, int, int]:
            index = page.get("index", self.redirect_index.get(page["title"]))
            return (index is None, index or 0, page["pageid"])

        ranked = sorted(self.pages.values(), key=position)[:k]
        return [
            PageHit(
                wiki=wiki,
                page_id=page["pageid"],
                revision_id=page["lastrevid"],
                title=page["title"],
                rank=rank,
                wikidata_id=(page.get("pageprops") or {}).get("wikibase_item"),
                langlinks=tuple(sorted({(link["lang"], link["title"]) for link in page["langlinks"]})),
            )
            for rank, page in enumerate(ranked, start=1)
        ]
