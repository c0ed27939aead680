"""``mm-rag`` retrieval: image and question embedded together, searched over the corpus's passages.

The passages are the ones the text index cut (same ids), embedded by a CLIP-style dual encoder
into a multimodal shard per language beside the text index (``m4build.retrieval.multimodal_index``);
shards are built on first use and reused afterwards. As for text retrieval, each item searches the
English shard and its own language's shard, and the lists are merged by cosine score.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from m4build.eval.m4rag.items import EvalItem
from m4build.eval.m4rag.retrieval import ENGLISH_SHARD, Passage, Retrieved, merge_ranked, shards_for
from m4build.hub.load import index_info, resolve_index_folder
from m4build.languages import load_languages
from m4build.progress import NullProgress, ProgressReporter
from m4build.retrieval.multimodal import MultimodalEncoder, load_multimodal_encoder
from m4build.retrieval.multimodal_index import MultimodalSearcher, build_multimodal_index, load_multimodal_index


class MultimodalPassageRetriever:
    """Top-k passages for (image, question) pairs from the corpus's multimodal shards."""

    def __init__(self, index: str, encoder: MultimodalEncoder, *, k: int, progress: ProgressReporter | None = None):
        self.index = index
        self.encoder = encoder
        self.k = k
        self.progress = progress or NullProgress()
        self.available = set(index_info(index).get("languages", {}))
        self._searchers: dict[str, MultimodalSearcher] = {}

    def describe(self) -> dict[str, Any]:
        return {"encoder": self.encoder.describe(), "queries": self.encoder.combination.describe(), "k": self.k}

    def retrieve(self, items: Sequence[EvalItem], images: Mapping[str, bytes]) -> Retrieved:
        by_shard: dict[str, list[EvalItem]] = defaultdict(list)
        result = Retrieved()
        for item in items:
            shards = shards_for(item, self.available)
            if len(shards) == 1 and load_languages().get(item.lang).wiki != ENGLISH_SHARD:
                result.english_only.append(item.item_id)
            for shard in shards:
                by_shard[shard].append(item)
        found: dict[str, list[list[Passage]]] = defaultdict(list)
        for shard, members in sorted(by_shard.items()):
            hits = self._searcher(shard).search(
                [images[item.item_id] for item in members],
                [item.question for item in members],
                k=self.k,
                names=[item.item_id for item in members],
            )
            for item, ranked in zip(members, hits):
                found[item.item_id].append([Passage.from_hit(hit, shard) for hit in ranked])
        result.passages = {item.item_id: merge_ranked(found[item.item_id], self.k) for item in items}
        return result

    def _searcher(self, shard: str) -> MultimodalSearcher:
        if shard not in self._searchers:
            folder = resolve_index_folder(self.index, shard)
            build_multimodal_index(folder, shard, self.encoder, progress=self.progress)
            self._searchers[shard] = load_multimodal_index(folder, shard, encoder=self.encoder)
        return self._searchers[shard]


def open_multimodal_retriever(index: str | None, encoder: str, *, k: int) -> MultimodalPassageRetriever:
    """The retriever the CLI hands to the runner; the encoder is loaded once, up front."""
    assert index is not None, "the CLI checks that mm-rag has --corpus"
    return MultimodalPassageRetriever(str(index), load_multimodal_encoder(encoder), k=k)
