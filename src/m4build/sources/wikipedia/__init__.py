"""Wikipedia sources: live API, local snapshot, and the embedded sample."""

from m4build.sources.wikipedia.base import SearchFailed, SourceStats, WikipediaSource

__all__ = ["SearchFailed", "SourceStats", "WikipediaSource"]
