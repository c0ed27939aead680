"""The ``sample`` Wikipedia source: the small snapshot of real articles shipped inside m4build.

It lets every command run offline on a fresh install. The articles (27 real revisions from 12
wikis, see ``corpora/sample/wikipedia/ATTRIBUTION.md``) are a parquet in our article schema,
built by ``scripts/build_sample_articles.py``; searching them is exactly the ``snapshot`` source,
so the sample exercises the same code as a full dump.
"""

from __future__ import annotations

import os

from m4build.resources import data_path
from m4build.sources.wikipedia.snapshot import Progress, SnapshotSource

SAMPLE_ARTICLES = ("corpora", "sample", "wikipedia", "articles.parquet")
"""Where the embedded articles live among the packaged data folders."""


class SampleSource(SnapshotSource):
    """A ``SnapshotSource`` over the embedded articles.

    The index is built on first use (well under a second) into ``cache_dir`` — pass the run
    folder's cache; by default the user cache (``~/.cache/m4build/snapshots``) — and reused after.
    """

    name = "sample"

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None, *, progress: Progress | None = None):
        super().__init__(data_path(*SAMPLE_ARTICLES), cache_dir, progress=progress)
