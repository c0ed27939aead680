"""Retrieval: passages, dense (FAISS) and BM25 index shards, and searching them.

``load_index(folder, lang)`` returns a ``Searcher``; ``m4build index`` builds what it loads.
"""

from m4build.retrieval.searcher import Hit, Searcher, load_index, locate_index

__all__ = ["Hit", "Searcher", "load_index", "locate_index"]
