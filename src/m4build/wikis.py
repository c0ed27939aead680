"""Names of Wikipedia editions: subdomain ("zh-yue") versus database name ("zh_yuewiki").

Records carry the database name (as Wikimedia Enterprise and Wikidata sitelinks do); URLs need
the subdomain. These helpers are the only place that converts between them.
"""

from __future__ import annotations

from urllib.parse import quote


def dbname(subdomain: str) -> str:
    """``"zh-yue"`` -> ``"zh_yuewiki"``; ``"en"`` -> ``"enwiki"``."""
    return subdomain.replace("-", "_") + "wiki"


def subdomain(wiki: str) -> str:
    """``"zh_yuewiki"`` -> ``"zh-yue"``; ``"enwiki"`` -> ``"en"``."""
    if not wiki.endswith("wiki"):
        raise ValueError(f"not a Wikipedia database name: {wiki!r} (expected e.g. 'enwiki')")
    return wiki[: -len("wiki")].replace("_", "-")


def article_url(wiki: str, title: str) -> str:
    """The canonical article URL, as Wikipedia links it."""
    return f"https://{subdomain(wiki)}.wikipedia.org/wiki/{quote(title.replace(' ', '_'), safe='/:(),')}"
