"""Opening the Wikipedia source a command asked for, from the recipe and flags.

Kept out of the CLI so that library users and tests open sources exactly as the command does.
The returned ``info`` is what the manifest records about the source: never a secret.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from m4build.errors import UsageError
from m4build.languages import Language
from m4build.progress import NullProgress, ProgressReporter, counting
from m4build.sources.wikipedia.api import MediaWikiApiSource
from m4build.sources.wikipedia.base import WikipediaSource
from m4build.sources.wikipedia.politeness import build_user_agent
from m4build.sources.wikipedia.sample import SampleSource
from m4build.sources.wikipedia.snapshot import SnapshotSource

DEFAULT_ENDPOINT = "https://{subdomain}.wikipedia.org/w/api.php"


def variants_by_wiki(languages: Sequence[Language]) -> dict[str, str]:
    """The language-converter variant to render each wiki in (zhwiki -> zh-cn).

    When two selected languages want different variants of one wiki (zh_cn and zh_sg), the first
    by code wins, since a revision is fetched once; both are Simplified Chinese today.
    """
    variants: dict[str, str] = {}
    for language in sorted(languages, key=lambda lang: lang.code):
        if language.variant:
            variants.setdefault(language.dbname, language.variant)
    return variants


def open_source(
    kind: str,
    recipe: dict[str, Any],
    *,
    dump_paths: Sequence[Path] = (),
    endpoint: str | None = None,
    cache_dir: Path | None = None,
    languages: Sequence[Language] = (),
    progress: ProgressReporter | None = None,
) -> tuple[WikipediaSource, dict[str, Any]]:
    """The source for ``kind`` ("api", "dump" or "sample") and what the manifest says about it."""
    cache_dir = cache_dir.resolve() if cache_dir is not None else None
    if kind == "api":
        user_agent = build_user_agent(recipe.get("contact"))
        template = endpoint or DEFAULT_ENDPOINT
        source = MediaWikiApiSource(
            user_agent,
            endpoint=template,
            max_concurrency_per_wiki=int(recipe["concurrency_per_wiki"]),
            timeout=float(recipe["timeout_s"]),
            max_retries=int(recipe["max_retries"]),
            maxlag=int(recipe["maxlag"]),
            variant_of=variants_by_wiki(languages),
        )
        return source, {"kind": "api", "endpoint": template, "user_agent": user_agent}
    progress = progress or NullProgress()
    if kind == "dump":
        paths = [Path(path) for path in dump_paths]
        # A first run over a full dump indexes millions of records; later runs load the cache.
        with progress.task("index snapshot (records read)", total=None) as advance:
            source = SnapshotSource(paths, cache_dir, progress=counting(advance))
        return source, {"kind": "dump", "paths": [os.fspath(path.resolve()) for path in paths], "wikis": list(source.wikis)}
    if kind == "sample":
        source = SampleSource(cache_dir)
        return source, {"kind": "sample", "wikis": list(source.wikis)}
    raise UsageError(f"unknown source {kind!r}", "Valid sources: api, dump, sample.")
