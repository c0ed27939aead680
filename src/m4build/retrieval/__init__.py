"""Retrieval: passages, dense (FAISS) and BM25 index shards, multimodal shards, and searching them.

``load_index(folder, lang)`` returns a ``Searcher``; ``m4build index`` builds what it loads.
``build_multimodal_index`` / ``load_multimodal_index`` do the same for a CLIP-style dual encoder
over the same passages (``mm-rag``). The multimodal modules are imported on first use, since they
load torch and transformers.
"""

from typing import Any

from m4build.retrieval.searcher import Hit, Searcher, load_index, locate_index

_MULTIMODAL = {
    "MultimodalEncoder": "m4build.retrieval.multimodal",
    "QueryCombination": "m4build.retrieval.multimodal",
    "load_multimodal_encoder": "m4build.retrieval.multimodal",
    "MultimodalSearcher": "m4build.retrieval.multimodal_index",
    "build_multimodal_index": "m4build.retrieval.multimodal_index",
    "load_multimodal_index": "m4build.retrieval.multimodal_index",
}

__all__ = ["Hit", "Searcher", "load_index", "locate_index", *_MULTIMODAL]


def __getattr__(name: str) -> Any:
    if name in _MULTIMODAL:
        import importlib

        return getattr(importlib.import_module(_MULTIMODAL[name]), name)
    raise AttributeError(f"module 'm4build.retrieval' has no attribute {name!r}")
