"""Recall@k over ranked documents, and CHARGE's multimodal recall over retrieved text and charts.

Recall@k is the share of a query's relevant documents found in its top k: |top k ∩ relevant| /
|relevant| (``trec_eval``'s ``recall_k``; not BEIR's capped recall, which divides by min(k,
|relevant|)), averaged over queries. The ranking comes from scores with ties broken by document id
(``m4build.metrics.trec.rank_by_score``), never from input order.

Multimodal recall is the retrieval metric of Chart-MRAG Bench (CHARGE; Yang et al., "Benchmarking
Multimodal RAG through a Chart-based Document Question-Answering Generation Framework",
arXiv:2502.14864, repository Nomothings/CHARGE). A question's evidence is text (``gt_text``) and
charts (``gt_chart``), while the retriever returns passages and chart images; text references are
matched at sentence level and charts exactly. The repository releases data only, no evaluation code
(its issue #3 asks for it), so the counting below is our reading of that sentence, made explicit:

* each distinct sentence of the reference text is one unit, recalled when it appears, on word
  boundaries and after ``normalize_for_hash`` (Unicode forms, case, punctuation, whitespace), inside
  some retrieved passage — so passages of any size match, whether CHARGE's sentence-level corpus
  chunks or our own section chunks;
* each distinct reference chart is one unit, recalled when its id is among the retrieved chart ids;
* an item's multimodal recall is recalled units / units; text and chart recall are also given per
  item (``None`` without such a reference), with ``complete`` saying whether every unit was found.

Sentences are split after ``.``, ``!`` or ``?`` (and closing quotes or brackets) followed by
whitespace and a character that is not lower case, and at blank lines. An abbreviation followed by
a capital ("the U.S. Congress") splits one sentence in two; both halves are still found in any
passage holding the sentence, so that only changes the unit count.

Retrieved evidence is what the generator was given (cut to k by the caller).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from m4build.metrics.checks import InputProblems, check_same_ids
from m4build.metrics.trec import RankedDoc, checked_depths, find_run_problems, rank_by_score
from m4build.text.normalize import normalize_for_hash

DEFAULT_DEPTHS = (1, 5, 10)

_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s+")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")
_RECALL_HINT = "Give one ranking per query and at least one relevant document per query."
_MULTIMODAL_HINT = (
    "Give retrieved evidence for every reference item (and only those), each reference with text "
    "or a chart, and each item with something retrieved."
)


@dataclass(frozen=True)
class QueryRecall:
    """One query's recall at each depth."""

    query_id: str
    recall: dict[int, float]
    relevant: int

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query_id, "relevant": self.relevant, **_named(self.recall)}


@dataclass(frozen=True)
class RecallScores:
    """Mean recall at each depth over all queries, and every query's values."""

    depths: tuple[int, ...]
    recall: dict[int, float]
    per_query: tuple[QueryRecall, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            **_named(self.recall),
            "queries": len(self.per_query),
            "per_query": [scores.as_dict() for scores in self.per_query],
        }


def recall_at_k(
    run: Mapping[str, Sequence[RankedDoc]],
    relevant: Mapping[str, Collection[str]],
    *,
    depths: Iterable[int] = DEFAULT_DEPTHS,
) -> RecallScores:
    """Recall@k of ``run`` for every query of ``relevant`` (query -> its relevant document ids)."""
    cutoffs = checked_depths(depths)
    check_same_ids("recall rankings", run, relevant, _RECALL_HINT)
    problems = InputProblems("recall rankings")
    if not relevant:
        problems.add("empty query sets", "no query")
    for query in sorted(relevant):
        if not relevant[query]:
            problems.add("queries without a relevant document", query)
    find_run_problems(run, problems)
    problems.raise_if_any(_RECALL_HINT)
    per_query = tuple(
        _query_recall(query, run[query], set(relevant[query]), cutoffs) for query in sorted(run)
    )
    mean = {k: sum(scores.recall[k] for scores in per_query) / len(per_query) for k in cutoffs}
    return RecallScores(depths=cutoffs, recall=mean, per_query=per_query)


def _query_recall(
    query: str, docs: Sequence[RankedDoc], relevant: set[str], depths: tuple[int, ...]
) -> QueryRecall:
    ranking = rank_by_score(docs)
    found = {k: len(relevant.intersection(ranking[:k])) / len(relevant) for k in depths}
    return QueryRecall(query_id=query, recall=found, relevant=len(relevant))


@dataclass(frozen=True)
class MultimodalEvidence:
    """Text passages and chart ids: a question's references, or what was retrieved for it."""

    texts: tuple[str, ...] = field(default=())
    charts: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "texts", tuple(self.texts))
        object.__setattr__(self, "charts", tuple(self.charts))


@dataclass(frozen=True)
class ItemMultimodalRecall:
    """How many reference sentences and charts of one item were retrieved."""

    item_id: str
    sentences: int
    sentences_recalled: int
    charts: int
    charts_recalled: int

    @property
    def recall(self) -> float:
        return (self.sentences_recalled + self.charts_recalled) / (self.sentences + self.charts)

    @property
    def text_recall(self) -> float | None:
        return self.sentences_recalled / self.sentences if self.sentences else None

    @property
    def chart_recall(self) -> float | None:
        return self.charts_recalled / self.charts if self.charts else None

    @property
    def complete(self) -> bool:
        return self.sentences_recalled == self.sentences and self.charts_recalled == self.charts

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item_id,
            "recall": self.recall,
            "text_recall": self.text_recall,
            "chart_recall": self.chart_recall,
            "complete": self.complete,
            "sentences": self.sentences,
            "sentences_recalled": self.sentences_recalled,
            "charts": self.charts,
            "charts_recalled": self.charts_recalled,
        }


@dataclass(frozen=True)
class MultimodalRecallScores:
    """Means over items: recall over all, text recall over items with text references, chart recall
    over items with chart references, and the share of items whose every reference was retrieved."""

    recall: float
    text_recall: float | None
    chart_recall: float | None
    complete: float
    per_item: tuple[ItemMultimodalRecall, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "recall": self.recall,
            "text_recall": self.text_recall,
            "chart_recall": self.chart_recall,
            "complete": self.complete,
            "items": len(self.per_item),
            "per_item": [item.as_dict() for item in self.per_item],
        }


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, split as the module docstring says, stripped, empty ones dropped."""
    sentences: list[str] = []
    for block in _BLANK_LINE.split(text):
        start = 0
        for end in _SENTENCE_END.finditer(block):
            if end.end() < len(block) and not block[end.end()].islower():
                sentences.append(block[start : end.end()])
                start = end.end()
        sentences.append(block[start:])
    return [sentence.strip() for sentence in sentences if sentence.strip()]


def multimodal_recall(
    retrieved: Mapping[str, MultimodalEvidence], references: Mapping[str, MultimodalEvidence]
) -> MultimodalRecallScores:
    """CHARGE's multimodal recall of ``retrieved`` evidence against ``references``, both keyed by item id."""
    check_same_ids("multimodal retrieval", retrieved, references, _MULTIMODAL_HINT)
    problems = InputProblems("multimodal retrieval")
    if not references:
        problems.add("empty item sets", "no item")
    for item in sorted(references):
        if not _reference_sentences(references[item]) and not references[item].charts:
            problems.add("references with neither text nor a chart", item)
        if not retrieved[item].texts and not retrieved[item].charts:
            problems.add("items with nothing retrieved", item)
    problems.raise_if_any(_MULTIMODAL_HINT)
    per_item = tuple(_item_recall(item, retrieved[item], references[item]) for item in sorted(references))
    return MultimodalRecallScores(
        recall=sum(item.recall for item in per_item) / len(per_item),
        text_recall=_mean(item.text_recall for item in per_item),
        chart_recall=_mean(item.chart_recall for item in per_item),
        complete=sum(item.complete for item in per_item) / len(per_item),
        per_item=per_item,
    )


def _item_recall(
    item: str, retrieved: MultimodalEvidence, reference: MultimodalEvidence
) -> ItemMultimodalRecall:
    sentences = _reference_sentences(reference)
    passages = [f" {normalize_for_hash(text)} " for text in retrieved.texts]
    charts = set(reference.charts)
    return ItemMultimodalRecall(
        item_id=item,
        sentences=len(sentences),
        sentences_recalled=sum(1 for sentence in sentences if any(f" {sentence} " in p for p in passages)),
        charts=len(charts),
        charts_recalled=len(charts.intersection(retrieved.charts)),
    )


def _reference_sentences(reference: MultimodalEvidence) -> set[str]:
    """Distinct normalised sentences of the reference texts (a sentence of only punctuation is none)."""
    normalized = (normalize_for_hash(s) for text in reference.texts for s in split_sentences(text))
    return {sentence for sentence in normalized if sentence}


def _mean(values: Iterable[float | None]) -> float | None:
    defined = [value for value in values if value is not None]
    return sum(defined) / len(defined) if defined else None


def _named(recall: dict[int, float]) -> dict[str, float]:
    return {f"Recall@{k}": value for k, value in recall.items()}
