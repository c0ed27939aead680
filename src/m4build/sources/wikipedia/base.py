"""The contract every Wikipedia source fulfils: search a wiki, then fetch page revisions.

Three implementations exist: ``api`` (the live MediaWiki Action API through mwclient),
``snapshot`` (a local Enterprise HTML dump or parquet of articles, searched with BM25) and
``sample`` (the small snapshot shipped inside the package). Pipelines only see this interface, so a
corpus built from a dump and one built live go through exactly the same steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from threading import Lock
from typing import Protocol, runtime_checkable

from m4build.records import Article, FetchFailure, PageHit, PageRef


class SearchFailed(Exception):
    """A search that still failed after every retry; the pipeline records it and goes on."""

    def __init__(self, wiki: str, query: str, reason: str, detail: str = "", attempts: int = 1):
        super().__init__(f"search on {wiki} for {query!r} failed: {reason} {detail}".strip())
        self.wiki = wiki
        self.query = query
        self.reason = reason
        self.detail = detail
        self.attempts = attempts


class SourceStats:
    """Thread-safe counters a source keeps: requests by kind, retries, cache hits, failures."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = Lock()

    def update(self, key: str, value: int = 1) -> None:
        with self._lock:
            self._counts[key] += value

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._counts.items()))


@runtime_checkable
class WikipediaSource(Protocol):
    """Search and fetch; implementations must be safe to call from several threads at once."""

    name: str
    stats: SourceStats

    def search(self, wiki: str, query: str, k: int) -> list[PageHit]:
        """The top ``k`` articles (main namespace) for ``query`` on ``wiki``, best first.

        Raises ``SearchFailed`` when the wiki keeps failing.
        """
        ...

    def fetch(self, wiki: str, pages: Sequence[PageRef]) -> Iterator[Article | FetchFailure]:
        """The HTML of each requested revision, or a failure saying why it could not be had.

        Yields exactly one record per requested page, in any order.
        """
        ...

    def close(self) -> None: ...
