"""Passages for the retrieval settings, from the published shards, in English and the item's language.

As in the paper, a query is searched against the English shard and the item's own Wikipedia shard;
the two ranked lists are merged by score (both shards are embedded by the same model, so dense
scores compare) with ties broken by passage id, and the top k are kept. An item whose language has
no shard in the index is searched in English alone and counted, so the report says how many.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m4build.errors import UsageError
from m4build.eval.m4rag.items import EvalItem
from m4build.hub.load import index_info, load_index
from m4build.languages import load_languages
from m4build.retrieval.searcher import Hit, Searcher

ENGLISH_SHARD = "en"


@dataclass(frozen=True)
class Passage:
    """One retrieved passage as the prompt and the records use it."""

    id: str
    text: str
    title: str
    rank: int
    score: float
    shard: str

    @classmethod
    def from_hit(cls, hit: Hit, shard: str) -> Passage:
        return cls(hit.id, hit.text, hit.title, hit.rank, hit.score, shard)

    @property
    def context(self) -> str:
        """How the passage is shown to the model: its title, then its text."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass
class Retrieved:
    """Passages per item id, and the items whose own language had no shard."""

    passages: dict[str, list[Passage]] = field(default_factory=dict)
    english_only: list[str] = field(default_factory=list)


def shards_for(item: EvalItem, available: set[str]) -> list[str]:
    """The shards an item's queries search: English, then the item's wiki if the index has it."""
    wiki = load_languages().get(item.lang).wiki
    shards = [ENGLISH_SHARD] if ENGLISH_SHARD in available else []
    if wiki != ENGLISH_SHARD and wiki in available:
        shards.append(wiki)
    return shards


def merge_ranked(lists: Sequence[Sequence[Passage]], k: int) -> list[Passage]:
    """The best ``k`` passages of several ranked lists, by score then id, re-ranked from 1."""
    best: dict[str, Passage] = {}
    for passages in lists:
        for passage in passages:
            if passage.id not in best or passage.score > best[passage.id].score:
                best[passage.id] = passage
    ordered = sorted(best.values(), key=lambda passage: (-passage.score, passage.id))[:k]
    return [Passage(p.id, p.text, p.title, rank, p.score, p.shard) for rank, p in enumerate(ordered, start=1)]


class TextRetriever:
    """Searches an index (a run folder, a pushed folder or a Hub repo) for the eval's queries."""

    def __init__(self, index: str | Path, *, k: int, mode: str | None = None):
        self.index = str(index)
        self.k = k
        self.mode = mode
        self.manifest: Mapping[str, Any] = index_info(self.index)
        self.available = set(self.manifest.get("languages", {}))
        if ENGLISH_SHARD not in self.available:
            raise UsageError(
                f"The index {self.index} has no English shard, which every M4-RAG query searches.",
                f"Build it with `m4build index RUN --lang en,...` (it has: {', '.join(sorted(self.available))}).",
            )
        self._searchers: dict[str, Searcher] = {}

    def retrieve(self, queries: Mapping[str, tuple[EvalItem, str]]) -> Retrieved:
        """Top-k passages for each ``item_id -> (item, query text)``."""
        by_shard: dict[str, list[str]] = defaultdict(list)
        result = Retrieved()
        for item_id, (item, _query) in sorted(queries.items()):
            shards = shards_for(item, self.available)
            if len(shards) == 1 and load_languages().get(item.lang).wiki != ENGLISH_SHARD:
                result.english_only.append(item_id)
            for shard in shards:
                by_shard[shard].append(item_id)
        found: dict[str, list[list[Passage]]] = defaultdict(list)
        for shard, item_ids in sorted(by_shard.items()):
            hits = self._searcher(shard).search([queries[item_id][1] for item_id in item_ids], k=self.k, mode=self.mode)
            for item_id, ranked in zip(item_ids, hits):
                found[item_id].append([Passage.from_hit(hit, shard) for hit in ranked])
        result.passages = {item_id: merge_ranked(found[item_id], self.k) for item_id in sorted(queries)}
        return result

    def _searcher(self, shard: str) -> Searcher:
        if shard not in self._searchers:
            self._searchers[shard] = load_index(self.index, lang=shard)
        return self._searchers[shard]
