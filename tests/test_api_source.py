"""The live-API source (real mwclient, real HTTP) against the local MediaWiki server.

Every test talks HTTP to ``tests/servers/mediawiki.py`` on 127.0.0.1; waits between retries go
through an injected ``sleep`` that records them, so backoff is asserted without waiting.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import mwclient
import pytest
from servers.mediawiki import Fault, MediaWikiServer, WikiPage, load_fixture_pages, synthetic_pages

import m4build
from m4build.backoff import Backoff, retry_after_seconds
from m4build.errors import ConfigError
from m4build.records import Article, FetchFailure, PageRef
from m4build.sources.wikipedia.api import MediaWikiApiSource
from m4build.sources.wikipedia.base import SearchFailed, WikipediaSource
from m4build.sources.wikipedia.politeness import build_user_agent
from m4build.wikis import article_url

UA = "m4build-tests/0.1 (m4build-tests@example.org) mwclient/0.11.0"
FIXTURES = {(p.wiki, p.pageid): p for p in load_fixture_pages()}
MATRYOSHKA = FIXTURES[("enwiki", 331080)]

# Small hand-written enwiki pages whose search order is known: the best match has the largest page
# id, because the server lists pages by id and only ``index`` tells the rank.
DUMPLINGS = (
    WikiPage("enwiki", 9003, 7003, "Dumpling", "<p>A dumpling is dough. Dumpling dumpling soup.</p>", "Q841"),
    WikiPage("enwiki", 9002, 7002, "Jiaozi", "<p>Jiaozi is a Chinese dumpling; a dumpling with filling.</p>"),
    WikiPage(
        "enwiki",
        9001,
        7001,
        "Pierogi",
        "<p>Pierogi is a filled dumpling.</p>",
        "Q193121",
        langlinks=(("de", "Piroggen"), ("pl", "Pierogi"), ("uk", "Вареники")),
        old_revisions={6999: "<p>An older revision of Pierogi.</p>"},
    ),
)


@pytest.fixture
def server() -> Iterator[MediaWikiServer]:
    with MediaWikiServer([*FIXTURES.values(), *DUMPLINGS], max_langlinks=3) as running:
        yield running


class Sleeps(list[float]):
    """The injected ``sleep``: records each wait instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_source(server: MediaWikiServer, sleeps: Sleeps) -> Iterator[Callable[..., MediaWikiApiSource]]:
    made: list[MediaWikiApiSource] = []

    def make(**overrides: object) -> MediaWikiApiSource:
        options: dict[str, object] = {
            "endpoint": server.url_template,
            "timeout": 2.0,
            "backoff_base": 0.01,
            "backoff_cap": 0.1,
            "sleep": sleeps,
            "rng": random.Random(0),
            **overrides,
        }
        source = MediaWikiApiSource(UA, **options)  # type: ignore[arg-type]
        made.append(source)
        return source

    yield make
    for source in made:
        source.close()


def fetch_all(
    source: MediaWikiApiSource, wiki: str, refs: list[PageRef]
) -> dict[int, Article | FetchFailure]:
    records = list(source.fetch(wiki, refs))
    assert len(records) == len({(r.page_id, r.revision_id) for r in refs}), "one record per page"
    return {record.page_id: record for record in records}


def ref(page: WikiPage, revid: int | None = None) -> PageRef:
    return PageRef(page.wiki, page.pageid, revid or page.revid, page.title)


# -- search ----------------------------------------------------------------------------------------


def test_source_fulfils_the_protocol(make_source: Callable[..., MediaWikiApiSource]) -> None:
    source = make_source()
    assert isinstance(source, WikipediaSource)
    assert source.name == "api"


def test_search_returns_ranked_hits_with_ids_revisions_wikidata_and_langlinks(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    source = make_source()
    hits = source.search("enwiki", "dumpling", 10)

    assert [(h.rank, h.title) for h in hits] == [(1, "Dumpling"), (2, "Jiaozi"), (3, "Pierogi")]
    pierogi = hits[2]
    assert (pierogi.wiki, pierogi.page_id, pierogi.revision_id) == ("enwiki", 9001, 7001)
    assert pierogi.wikidata_id == "Q193121"
    assert pierogi.langlinks == (("de", "Piroggen"), ("pl", "Pierogi"), ("uk", "Вареники"))
    assert hits[1].wikidata_id is None and hits[1].langlinks == ()
    assert hits[0].ref == PageRef("enwiki", 9003, 7003, "Dumpling")


def test_search_follows_langlink_continuation_without_advancing_the_generator(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    source = make_source()
    hits = source.search("enwiki", "matryoshka dumpling", 5)  # 4 + 3 links, 3 per answer

    by_title = {h.title: h for h in hits}
    assert by_title["Matryoshka doll"].langlinks == MATRYOSHKA.langlinks
    assert by_title["Pierogi"].langlinks == DUMPLINGS[2].langlinks
    searches = [r for r in server.stats.log if r.kind in ("search", "continue")]
    assert [r.kind for r in searches] == ["search", "continue", "continue"]
    for request in searches:
        assert request.params["gsrsearch"] == "matryoshka dumpling"
        assert "gsroffset" not in request.params
    assert source.stats.as_dict()["requests.continue"] == 2


def test_search_resolves_redirects_to_one_hit(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    hits = make_source().search("enwiki", "russian babushka doll", 10)
    assert [(h.rank, h.page_id, h.wikidata_id) for h in hits] == [(1, 331080, "Q17297")]
    assert server.stats.log[-1].params["redirects"] == "1"


def test_search_on_other_wikis_and_without_hits(make_source: Callable[..., MediaWikiApiSource]) -> None:
    source = make_source()
    assert [h.title for h in source.search("arwiki", "رياضيات", 3)] == ["رياضيات"]
    assert [h.title for h in source.search("dewiki", "Matrjoschka", 3)] == ["Matrjoschka"]
    assert source.search("enwiki", "zzzxqv", 3) == []


def test_search_keeps_at_most_k_hits(make_source: Callable[..., MediaWikiApiSource]) -> None:
    hits = make_source().search("enwiki", "dumpling", 2)
    assert [h.title for h in hits] == ["Dumpling", "Jiaozi"]
    with pytest.raises(ValueError, match="between 1 and 50"):
        make_source().search("enwiki", "dumpling", 51)


# -- fetch -----------------------------------------------------------------------------------------


def test_fetch_returns_the_html_of_the_requested_revision(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    source = make_source()
    pierogi = DUMPLINGS[2]
    older = {r.revision_id: r for r in source.fetch("enwiki", [ref(pierogi, 6999), ref(pierogi)])}

    assert older[6999].html == "<p>An older revision of Pierogi.</p>"
    latest = older[7001]
    assert isinstance(latest, Article)
    assert latest.html == pierogi.html
    assert latest.url == article_url("enwiki", "Pierogi") and latest.source == "api"
    assert latest.wikidata_id is None  # the pipeline joins it from the search hit
    assert datetime.strptime(latest.retrieved_at, "%Y-%m-%dT%H:%M:%SZ")
    parse = [r.params for r in server.stats.log if r.kind == "parse"]
    assert {p["oldid"] for p in parse} == {"6999", "7001"}
    assert all(p["formatversion"] == "2" and p["disableeditsection"] == "1" for p in parse)


def test_fetch_of_real_pages_in_several_scripts(make_source: Callable[..., MediaWikiApiSource]) -> None:
    source = make_source()
    for (wiki, _), page in FIXTURES.items():
        [article] = source.fetch(wiki, [ref(page)])
        assert isinstance(article, Article)
        assert article.html == page.html and article.title == page.title


def test_fetch_asks_each_unique_revision_once(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    records = list(make_source().fetch("enwiki", [ref(MATRYOSHKA)] * 3))
    assert len(records) == 1 and isinstance(records[0], Article)
    assert server.stats.count(kind="parse") == 1
    assert list(make_source().fetch("enwiki", [])) == []


def test_fetch_asks_for_the_language_variant(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    [zh_page] = synthetic_pages(1, wikis=["zhwiki"])
    server.add_pages([zh_page])
    [article] = make_source(variant_of={"zhwiki": "zh-cn"}).fetch("zhwiki", [ref(zh_page)])
    assert isinstance(article, Article)
    [parse] = [r for r in server.stats.log if r.kind == "parse"]
    assert parse.params["variant"] == "zh-cn"


# -- faults: retried with backoff, honouring Retry-After ------------------------------------------------


def in_seconds(seconds: int) -> str:
    return format_datetime(datetime.now(timezone.utc) + timedelta(seconds=seconds), usegmt=True)


FAULTS: dict[str, tuple[Callable[[], Fault], str, float | None]] = {
    # id: (the fault, built when the test runs; retry reason; least wait the server asked for)
    "429 Retry-After seconds": (lambda: Fault.http(429, retry_after="2"), "http-429", 2.0),
    "503 Retry-After date": (lambda: Fault.http(503, retry_after=in_seconds(30)), "http-503", 28.0),
    "500": (lambda: Fault.http(500), "http-500", None),
    "502": (lambda: Fault.http(502), "http-502", None),
    "maxlag": (lambda: Fault.maxlag(retry_after="3"), "maxlag", 3.0),
    "maxlag Retry-After date": (lambda: Fault.maxlag(retry_after=in_seconds(30)), "maxlag", 28.0),
    "maxlag without Retry-After": (lambda: Fault.maxlag(retry_after=None), "maxlag", None),
    "malformed JSON": (Fault.malformed, "malformed-json", None),
    "truncated body": (Fault.truncated, "truncated", None),
    "answer without its keys": (Fault.incomplete, "unexpected-answer", None),
}


@pytest.mark.parametrize("make_fault, reason, floor", FAULTS.values(), ids=FAULTS.keys())
def test_fetch_retries_each_fault_with_backoff(
    server: MediaWikiServer,
    make_source: Callable[..., MediaWikiApiSource],
    sleeps: Sleeps,
    make_fault: Callable[[], Fault],
    reason: str,
    floor: float | None,
) -> None:
    source = make_source()
    server.add_faults(make_fault(), make_fault(), kind="parse")
    [article] = source.fetch("enwiki", [ref(MATRYOSHKA)])

    assert isinstance(article, Article) and article.html == MATRYOSHKA.html
    assert len(sleeps) == 2
    if floor is None:
        assert all(0 <= s <= 0.1 for s in sleeps)  # jittered below the (tiny) cap
    else:
        assert all(floor <= s <= floor + 6 for s in sleeps)
    stats = source.stats.as_dict()
    assert stats[f"retries.{reason}"] == 2
    assert stats["requests.parse"] == server.stats.count(kind="parse") == 3
    assert server.pending_faults() == 0


@pytest.mark.parametrize(
    "fault, reason",
    [
        (Fault.http(429, retry_after="1"), "http-429"),
        (Fault.maxlag(retry_after="1"), "maxlag"),
        (Fault.malformed(), "malformed-json"),
        (Fault.incomplete(), "unexpected-answer"),
    ],
    ids=["429", "maxlag", "malformed", "incomplete"],
)
def test_search_and_its_continuation_retry_faults(
    server: MediaWikiServer,
    make_source: Callable[..., MediaWikiApiSource],
    sleeps: Sleeps,
    fault: Fault,
    reason: str,
) -> None:
    source = make_source()
    server.add_faults(fault, kind="search")
    server.add_faults(fault, kind="continue")
    hits = source.search("enwiki", "matryoshka", 5)

    assert hits[0].langlinks == MATRYOSHKA.langlinks
    assert source.stats.as_dict()[f"retries.{reason}"] == 2
    assert len(sleeps) == 2


def test_siteinfo_setup_is_retried_too(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource], sleeps: Sleeps
) -> None:
    server.add_faults(Fault.maxlag(retry_after="4"), Fault.http(503), Fault.incomplete(), kind="siteinfo")
    source = make_source()
    assert source.search("enwiki", "dumpling", 1)[0].title == "Dumpling"
    stats = source.stats.as_dict()
    assert stats["requests.siteinfo"] == 4
    assert (stats["retries.maxlag"], stats["retries.http-503"], stats["retries.unexpected-answer"]) == (
        1,
        1,
        1,
    )
    assert sleeps[0] >= 4


def test_a_hung_connection_times_out_and_is_retried(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    source = make_source(timeout=0.3)
    server.add_faults(Fault.hang(10), kind="parse")
    started = time.monotonic()
    [article] = source.fetch("enwiki", [ref(MATRYOSHKA)])

    assert isinstance(article, Article)
    assert time.monotonic() - started < 3
    assert source.stats.as_dict()["retries.timeout"] == 1


def test_fetch_gives_up_after_max_retries_and_loses_no_page(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource], sleeps: Sleeps
) -> None:
    source = make_source(max_retries=2)
    server.add_faults(*[Fault.malformed()] * 3, pageid=9002)
    server.add_faults(*[Fault.http(503, retry_after="1")] * 3, pageid=9001)
    records = fetch_all(source, "enwiki", [ref(p) for p in DUMPLINGS] + [ref(MATRYOSHKA)])

    assert isinstance(records[9003], Article) and isinstance(records[331080], Article)
    failed = records[9002]
    assert isinstance(failed, FetchFailure)
    assert (failed.reason, failed.attempts, failed.title) == ("malformed-json", 3, "Jiaozi")
    assert (records[9001].reason, records[9001].attempts) == ("http-503", 3)  # type: ignore[union-attr]
    stats = source.stats.as_dict()
    assert stats["failures.fetch.malformed-json"] == 1 and stats["failures.fetch.http-503"] == 1
    assert stats["fetched"] == 2 and len(sleeps) == 4


def test_search_gives_up_with_search_failed(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    source = make_source(max_retries=1)
    server.add_faults(Fault.incomplete(), Fault.incomplete(), kind="search")
    with pytest.raises(SearchFailed) as failed:
        source.search("enwiki", "dumpling", 5)
    assert (failed.value.reason, failed.value.attempts, failed.value.wiki) == (
        "unexpected-answer",
        2,
        "enwiki",
    )
    assert source.stats.as_dict()["failures.search.unexpected-answer"] == 1


def test_missing_pages_fail_at_once(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource], sleeps: Sleeps
) -> None:
    source = make_source()
    [hit] = source.search("enwiki", "jiaozi", 1)
    server.delete_page("enwiki", hit.page_id)  # deleted between search and fetch
    server.add_faults(Fault.missing(), pageid=9003)
    records = fetch_all(source, "enwiki", [hit.ref, ref(DUMPLINGS[0]), ref(MATRYOSHKA, 1)])

    assert {r.reason for r in records.values() if isinstance(r, FetchFailure)} == {"missing"}
    assert all(isinstance(r, FetchFailure) and r.attempts == 1 for r in records.values())
    assert "nosuchrevid" in records[9002].detail  # type: ignore[union-attr]
    assert sleeps == []


def test_an_unknown_wiki_fails_every_page_without_retrying(
    make_source: Callable[..., MediaWikiApiSource], sleeps: Sleeps
) -> None:
    source = make_source()
    refs = [PageRef("xxwiki", 1, 10, "A"), PageRef("xxwiki", 2, 20, "B")]
    assert {(r.reason, r.attempts) for r in source.fetch("xxwiki", refs)} == {("http-404", 1)}
    with pytest.raises(SearchFailed, match="http-404"):
        source.search("xxwiki", "anything", 5)
    assert sleeps == []


def test_an_unreachable_server_gives_failures_not_exceptions(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource], sleeps: Sleeps
) -> None:
    source = make_source(max_retries=1)
    server.stop()
    [failure] = source.fetch("enwiki", [ref(MATRYOSHKA)])
    assert isinstance(failure, FetchFailure) and failure.reason == "connection" and failure.attempts == 2


# -- politeness ----------------------------------------------------------------------------------------


def test_at_most_three_requests_in_flight_per_wiki(sleeps: Sleeps) -> None:
    pages = synthetic_pages(12, wikis=["enwiki", "dewiki"], seed=1)
    with MediaWikiServer(pages, delay=0.05) as slow:
        source = MediaWikiApiSource(UA, endpoint=slow.url_template, sleep=sleeps)
        by_wiki = {wiki: [ref(p) for p in pages if p.wiki == wiki] for wiki in ("enwiki", "dewiki")}
        results: list[list[Article | FetchFailure]] = []
        threads = [
            threading.Thread(target=lambda w=wiki: results.append(list(source.fetch(w, by_wiki[w]))))
            for wiki in ("enwiki", "enwiki", "dewiki")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        source.close()

    assert sorted(len(r) for r in results) == [12, 12, 12]
    assert all(isinstance(record, Article) for batch in results for record in batch)
    assert 2 <= slow.stats.max_in_flight["enwiki"] <= 3
    assert slow.stats.max_in_flight["dewiki"] <= 3


def test_every_request_is_polite(
    server: MediaWikiServer, make_source: Callable[..., MediaWikiApiSource]
) -> None:
    source = make_source(maxlag=5)
    hits = source.search("enwiki", "matryoshka dumpling", 5)
    assert all(isinstance(r, Article) for r in source.fetch("enwiki", [h.ref for h in hits]))

    log = server.stats.log
    assert {r.kind for r in log} == {"siteinfo", "search", "continue", "parse"}
    for request in log:
        assert request.headers["user-agent"] == UA
        assert request.params["maxlag"] == "5"
        assert "gzip" in request.headers["accept-encoding"]
        assert request.gzipped  # served compressed, and the client read it


# -- User-Agent and backoff policy -----------------------------------------------------------------------


def test_a_live_run_without_contact_is_refused_with_how_to_fix_it() -> None:
    with pytest.raises(ConfigError) as refused:
        build_user_agent(None, environ={})
    message = str(refused.value)
    assert "--contact you@example.org" in message and "export M4BUILD_CONTACT=" in message
    with pytest.raises(ConfigError, match="neither an email address nor"):
        build_user_agent("just a name", environ={})
    with pytest.raises(ConfigError, match="M4BUILD_USER_AGENT"):
        build_user_agent("me@example.org", environ={"M4BUILD_USER_AGENT": "mybot/1.0"})
    with pytest.raises(ConfigError):
        MediaWikiApiSource("  ")


def test_user_agent_names_tool_contact_and_library(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = build_user_agent("me@example.org", environ={})
    assert agent == f"m4build/{m4build.__version__} (me@example.org) mwclient/{mwclient.__version__}"
    assert "(https://example.org/me)" in build_user_agent(
        None, environ={"M4BUILD_CONTACT": "https://example.org/me"}
    )
    custom = "lab-crawler/2.0 (https://lab.example.org; ops@example.org)"
    assert build_user_agent("me@example.org", environ={"M4BUILD_USER_AGENT": custom}) == custom
    monkeypatch.setenv("M4BUILD_CONTACT", "env@example.org")
    assert "(env@example.org)" in build_user_agent(None)


def test_backoff_is_full_jitter_capped_and_floored_by_retry_after() -> None:
    backoff = Backoff(base=1.0, cap=8.0, rng=random.Random(3))
    assert [backoff.ceiling(n) for n in range(1, 6)] == [1, 2, 4, 8, 8]
    delays = [backoff.delay(4) for _ in range(200)]
    assert all(0 <= d <= 8 for d in delays) and max(delays) > 6 and min(delays) < 2
    assert all(backoff.delay(1, retry_after=30) >= 30 for _ in range(20))
    assert backoff.delay(1, retry_after=10_000) == 600  # an absurd header is bounded
    with pytest.raises(ValueError):
        Backoff(base=0)


def test_retry_after_header_values() -> None:
    now = datetime(2025, 4, 1, 12, 0, tzinfo=timezone.utc)
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("Tue, 01 Apr 2025 12:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Tue, 01 Apr 2025 11:00:00 GMT", now=now) == 0.0
    assert [retry_after_seconds(v) for v in (None, "", "soon", "-5")] == [None, None, None, None]


def test_the_server_speaks_mediawiki_well_enough_for_mwclient_itself(server: MediaWikiServer) -> None:
    """mwclient's high-level calls (legacy JSON shape, list=search, prop=langlinks continuation)."""
    site = mwclient.Site(f"127.0.0.1:{server.port}", path="/enwiki/w/", scheme="http")
    assert site.version[:2] >= (1, 16)
    assert [hit["title"] for hit in site.search("dumpling")] == ["Dumpling", "Jiaozi", "Pierogi"]
    page = site.pages["Matryoshka doll"]
    assert page.exists and page.pageid == 331080
    assert tuple(page.langlinks()) == MATRYOSHKA.langlinks  # 4 links, 3 per answer
    assert not site.pages["No such page"].exists
    assert server.stats.count(kind="langlinks") == 2
