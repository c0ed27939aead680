"""Retrievers ranking each image's candidate articles, as RAVENEA evaluates them.

- ``bm25``: the image's cultural caption as the query, BM25 (bm25s, m4build's tokenizer) over the
  articles' title and text, with IDF from all candidate articles of the build;
- ``dense``: the caption and the articles embedded by a sentence-transformers model (the recipe's
  default, or any model id or path given as the retriever);
- a CLIP-style model (any model with image and text towers): the image itself as the query against
  the articles' text, which is how RAVENEA's own retrievers (CLIP, SigLIP) rank.

Every retriever scores all candidates of an image; the ranking is by score with ties broken by
page id, never by the stored order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import bm25s
import numpy as np

from m4build.eval.ravenea.data import RaveneaData
from m4build.metrics.trec import RankedDoc, Run, rank_by_score
from m4build.text.tokenize import tokenize


def article_text(article: dict[str, Any]) -> str:
    return f"{article['title']}\n{article['text']}"


def run_retriever(data: RaveneaData, retriever: str, *, dense_model: str) -> tuple[Run, dict[str, Any]]:
    """Scores of every judged image's candidates, as a TREC-style run, and what was used."""
    images = [row for row in data.instances if row["file_name"] in data.judgments and row["file_name"] in data.candidates]
    if retriever == "bm25":
        scores, described = _bm25(data, images), {"retriever": "bm25", "query": "generate_caption"}
    else:
        model = dense_model if retriever == "dense" else retriever
        scores, described = _embedding(data, images, model)
    run: Run = {}
    for row in images:
        pages = data.candidates[row["file_name"]]
        docs = [RankedDoc(str(page), float(score), 0) for page, score in zip(pages, scores[row["file_name"]])]
        ranked = rank_by_score(docs)
        by_id = {doc.doc_id: doc for doc in docs}
        run[row["file_name"]] = tuple(RankedDoc(doc, by_id[doc].score, rank) for rank, doc in enumerate(ranked, start=1))
    return run, described


def _bm25(data: RaveneaData, images: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    pages = sorted(data.articles)
    position = {page: index for index, page in enumerate(pages)}
    index = bm25s.BM25()
    index.index([tokenize(article_text(data.articles[page])) for page in pages], show_progress=False)
    vocab = index.vocab_dict
    scores = {}
    for row in images:
        tokens = [token for token in tokenize(row["generate_caption"] or "") if token in vocab]
        all_scores = index.get_scores(tokens) if tokens else np.zeros(len(pages))
        scores[row["file_name"]] = [float(all_scores[position[page]]) for page in data.candidates[row["file_name"]]]
    return scores


def _embedding(data: RaveneaData, images: Sequence[dict[str, Any]], model: str) -> tuple[dict[str, list[float]], dict[str, Any]]:
    pages = sorted(data.articles)
    position = {page: index for index, page in enumerate(pages)}
    texts = [article_text(data.articles[page]) for page in pages]
    if _is_dual_encoder(model):
        from m4build.retrieval.multimodal import load_multimodal_encoder

        encoder = load_multimodal_encoder(model)
        documents = encoder.encode_passages(texts)
        queries = encoder.encode_images([data.image(row["file_name"]) for row in images], names=[row["file_name"] for row in images])
        described = {"retriever": model, "query": "image", "encoder": encoder.describe()}
    else:
        from sentence_transformers import SentenceTransformer

        encoder = SentenceTransformer(model, device=None)
        documents = encoder.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
        queries = encoder.encode([row["generate_caption"] or "" for row in images], normalize_embeddings=True, convert_to_numpy=True)
        described = {"retriever": model, "query": "generate_caption"}
    scores = {}
    for row, query in zip(images, queries):
        similarity = documents @ query
        scores[row["file_name"]] = [float(similarity[position[page]]) for page in data.candidates[row["file_name"]]]
    return scores, described


def _is_dual_encoder(model: str) -> bool:
    """Whether ``model`` has image and text towers (CLIP, SigLIP), judged from its config alone."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(model)
    except (OSError, ValueError):
        return False
    return hasattr(config, "vision_config") and hasattr(config, "text_config")
