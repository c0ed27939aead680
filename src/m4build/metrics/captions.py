"""Caption metrics as the COCO caption evaluation defines them: BLEU-1..4, ROUGE-L, CIDEr-D and CIDEr.

References (read for the definitions; the code is ours):

- pycocoevalcap 1.2 (PyPI; tylin/coco-caption): ``bleu/bleu_scorer.py`` (BLEU, Papineni et al. 2002,
  corpus-level, "closest" reference length), ``rouge/rouge.py`` (ROUGE-L, Lin 2004, beta = 1.2),
  ``cider/cider_scorer.py`` (despite its name, CIDEr-D: clipped, length-penalised) and
  ``tokenizer/ptbtokenizer.py`` (our Python version: ``m4build.metrics.coco_tokenize``).
- vrama91/cider: ``pyciderevalcap/cider/cider_scorer.py`` (plain CIDEr) and
  ``pyciderevalcap/ciderD/ciderD_scorer.py`` (CIDEr-D, Vedantam et al. 2015, section 6).
- Users: RAVENEA (yfyuan01/RAVENEA ``src/metrics.py``) scores cultural captions with pycocoevalcap's
  ``Rouge`` and ``Cider`` on raw, untokenized captions, one reference each, times 100; M²RAG
  (NEUIR/M2RAG ``src/evaluation/generation.py``) takes CIDEr from pycocoevalcap's ``CiderScorer`` on
  raw text, but BLEU from nltk's smoothed sentence BLEU and ROUGE-L from ``rouge_score`` (beta = 1,
  Porter stemming), which are not the COCO definitions. Pass ``tokenize=False`` to score text as
  those scripts do (split on whitespace, case kept).

Scores are on COCO's scales (BLEU and ROUGE-L 0..1, CIDEr 0..10); RAVENEA prints them times 100.
Input: ``candidates`` maps an item id to one caption (a string, or COCO's one-element list);
``references`` maps the same ids to a list of reference captions. With ``tokenize=True`` (COCO's
pipeline) both go through ``ptb_tokenize``; with ``tokenize=False`` they are taken as already
tokenized and split on whitespace. A candidate that is empty after that scores 0 and is counted in
``empty_candidates``; an empty reference is bad input.

===========================  ===================================  =======================================
                             pycocoevalcap (``mode="parity"``)    ours (``mode="default"``)
===========================  ===================================  =======================================
BLEU n-gram precision        (matches + 1e-15) / (total + 1e-9)   matches / total; BLEU-n = 0 when an
                                                                  order up to n has no match
ROUGE-L over references      max precision and max recall, each   F of the reference with the best F
                             from any reference, then F
ROUGE-L tokens               ``split(" ")``: double spaces make   ``split()``
                             empty tokens that count and match
tokenization (``tokenize``)  ``-lrb-`` etc. and runs of ! and ?   removed like the other punctuation
                             stay words (Java's output)
===========================  ===================================  =======================================

Why the defaults differ. COCO's epsilons make BLEU-4 of a caption set with no 4-gram match a small
positive number (about 1e-4) instead of 0. Its ROUGE-L pairs the precision of one reference with the
recall of another, so "a b c d" against "a b" and "a b c d e f g h" scores a perfect 1.0 though it
matches neither (each reference alone gives 0.71 and 0.63); we keep the best reference's F, the
multi-reference rule of Lin's ROUGE-1.5.5 ("best") and of ``rouge_score``'s ``score_multi``.

CIDEr-D (``cider_d``, the CIDEr that COCO, RAVENEA and M²RAG report) and plain CIDEr (``cider``)
share COCO's set-up: document frequencies come from the references of the evaluated set (so the
score of an item depends on the other items, and the CIDEr of a subset must be recomputed on the
subset, as RAVENEA does per country), idf = log(items) - log(max(1, df)), tf-idf vectors per n-gram
order 1..4, the mean over orders of the mean over references of the similarity, times 10. CIDEr's
similarity is the cosine; CIDEr-D clips the candidate's weights by the reference's (repeating a word
no longer pays) and multiplies by exp(-(l_c - l_r)^2 / (2 sigma^2)) with sigma = 6. Both modes
agree: COCO measures length in bigrams, not tokens, which changes nothing since the two differ only
when one side is empty and then the similarity is 0 anyway. A set of one item is refused (every idf
is log 1 = 0, so the score is 0 whatever the caption). Plain CIDEr here follows vrama91's code
(times 10, no stemming); the paper's CIDEr stems words and has no factor 10.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from m4build.errors import UsageError
from m4build.metrics.checks import InputProblems, check_same_ids, is_missing_number
from m4build.metrics.coco_tokenize import ptb_tokenize

Mode = Literal["default", "parity"]
MODES: tuple[str, ...] = ("default", "parity")
MAX_ORDER = 4  # BLEU-1..4 and CIDEr's n-gram orders, as in COCO
ROUGE_BETA = 1.2  # pycocoevalcap's Rouge: "updated the value below based on discussion with Hovey"
CIDER_SIGMA = 6.0  # CIDEr-D's length penalty width
_COCO_TINY, _COCO_SMALL = 1e-15, 1e-9  # bleu_scorer.py's smoothing of every precision

Candidates = Mapping[str, str | Sequence[str]]
References = Mapping[str, Sequence[str]]

_HINT = (
    "Give one caption per id in the candidates and a non-empty list of non-empty reference captions "
    "for the same ids."
)


@dataclass(frozen=True)
class CaptionInputs:
    """Checked captions: sorted ids, one candidate text per id, the reference texts per id."""

    ids: tuple[str, ...]
    candidates: dict[str, str]
    references: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class BleuScores:
    """Corpus BLEU-1..n (COCO pools n-gram counts and lengths over all items) and per-item BLEU."""

    mode: str
    scores: tuple[float, ...]
    brevity_penalty: float
    candidate_length: int
    reference_length: int
    items: int
    empty_candidates: int
    per_item: dict[str, tuple[float, ...]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            **{f"BLEU-{order}": score for order, score in enumerate(self.scores, start=1)},
            "brevity_penalty": self.brevity_penalty,
            "candidate_length": self.candidate_length,
            "reference_length": self.reference_length,
            "items": self.items,
            "empty_candidates": self.empty_candidates,
            "per_item": {item: list(scores) for item, scores in self.per_item.items()},
        }


@dataclass(frozen=True)
class RougeLScores:
    """Mean ROUGE-L F over items, and each item's."""

    mode: str
    score: float
    beta: float
    items: int
    empty_candidates: int
    per_item: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "ROUGE-L": self.score,
            "beta": self.beta,
            "items": self.items,
            "empty_candidates": self.empty_candidates,
            "per_item": dict(self.per_item),
        }


@dataclass(frozen=True)
class CiderScores:
    """Mean CIDEr-D (or CIDEr) over items, and each item's (0..10 scale, as COCO reports it)."""

    mode: str
    variant: str
    score: float
    sigma: float | None
    items: int
    empty_candidates: int
    per_item: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            self.variant: self.score,
            "sigma": self.sigma,
            "items": self.items,
            "empty_candidates": self.empty_candidates,
            "per_item": dict(self.per_item),
        }


@dataclass(frozen=True)
class CaptionScores:
    """BLEU-1..4, ROUGE-L and CIDEr-D of one caption set, from one tokenization."""

    mode: str
    tokenized: bool
    bleu: BleuScores
    rouge_l: RougeLScores
    cider_d: CiderScores

    def as_dict(self) -> dict[str, Any]:
        """The summary numbers (per-item scores are in each metric's own ``as_dict``)."""
        return {
            "mode": self.mode,
            "tokenized": self.tokenized,
            **{f"BLEU-{order}": score for order, score in enumerate(self.bleu.scores, start=1)},
            "ROUGE-L": self.rouge_l.score,
            "CIDEr-D": self.cider_d.score,
            "items": self.bleu.items,
            "empty_candidates": self.bleu.empty_candidates,
        }


def caption_scores(
    candidates: Candidates, references: References, *, tokenize: bool = True, mode: Mode = "default"
) -> CaptionScores:
    """BLEU-1..4, ROUGE-L and CIDEr-D, the COCO caption evaluation's set (see the module docstring)."""
    prepared = _prepared(candidates, references, tokenize=tokenize, mode=mode, what="caption metrics")
    _require_two_items(prepared, "CIDEr-D")
    return CaptionScores(
        mode=mode,
        tokenized=tokenize,
        bleu=_bleu(prepared, mode),
        rouge_l=_rouge_l(prepared, mode),
        cider_d=_cider(prepared, mode, clipped=True, sigma=CIDER_SIGMA),
    )


def bleu(
    candidates: Candidates, references: References, *, tokenize: bool = True, mode: Mode = "default"
) -> BleuScores:
    """Corpus BLEU-1..4 with COCO's closest-reference brevity penalty (ties go to the shorter reference)."""
    return _bleu(_prepared(candidates, references, tokenize=tokenize, mode=mode, what="BLEU"), mode)


def rouge_l(
    candidates: Candidates, references: References, *, tokenize: bool = True, mode: Mode = "default"
) -> RougeLScores:
    """ROUGE-L (LCS-based F with beta = 1.2), averaged over items."""
    return _rouge_l(_prepared(candidates, references, tokenize=tokenize, mode=mode, what="ROUGE-L"), mode)


def cider_d(
    candidates: Candidates, references: References, *, tokenize: bool = True, mode: Mode = "default"
) -> CiderScores:
    """CIDEr-D, what COCO and pycocoevalcap's ``Cider`` report as "CIDEr"."""
    prepared = _prepared(candidates, references, tokenize=tokenize, mode=mode, what="CIDEr-D")
    _require_two_items(prepared, "CIDEr-D")
    return _cider(prepared, mode, clipped=True, sigma=CIDER_SIGMA)


def cider(
    candidates: Candidates, references: References, *, tokenize: bool = True, mode: Mode = "default"
) -> CiderScores:
    """Plain CIDEr (cosine of tf-idf vectors, no clipping, no length penalty); prefer ``cider_d``."""
    prepared = _prepared(candidates, references, tokenize=tokenize, mode=mode, what="CIDEr")
    _require_two_items(prepared, "CIDEr")
    return _cider(prepared, mode, clipped=False, sigma=None)


def checked_captions(candidates: Candidates, references: References, *, what: str) -> CaptionInputs:
    """Refuse mismatched ids, missing or non-text captions, and ids without references.

    Shared by every caption-against-references metric (BERTScore too), so they reject the same
    inputs with the same messages.
    """
    problems = InputProblems(what)
    if not candidates and not references:
        problems.add("inputs without any item", "no candidates and no references")
        problems.raise_if_any(_HINT)
    check_same_ids(what, candidates, references, _HINT)
    ids = tuple(sorted(candidates))
    texts = {item: _candidate_text(item, candidates[item], problems) for item in ids}
    refs = {item: _reference_texts(item, references[item], problems) for item in ids}
    problems.raise_if_any(_HINT)
    return CaptionInputs(ids=ids, candidates=texts, references=refs)


def _candidate_text(item: str, value: object, problems: InputProblems) -> str:
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            problems.add("candidate lists without exactly one caption", f"{item}: {len(value)} captions")
            return ""
        value = value[0]
    if is_missing_number(value):
        problems.add("missing candidates", item)
        return ""
    if not isinstance(value, str):
        problems.add("candidates that are not text", f"{item}: {type(value).__name__}")
        return ""
    return value


def _reference_texts(item: str, value: object, problems: InputProblems) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        problems.add("references not given as a list of captions", f"{item}: {type(value).__name__}")
        return ()
    if not value:
        problems.add("ids without references", item)
    texts = []
    for reference in value:
        if is_missing_number(reference) or not isinstance(reference, str):
            problems.add("missing or non-text references", item)
        elif not reference.strip():
            problems.add("empty references", item)
        else:
            texts.append(reference)
    return tuple(texts)


@dataclass(frozen=True)
class _Prepared:
    ids: tuple[str, ...]
    candidates: dict[str, str]
    references: dict[str, tuple[str, ...]]
    empty_candidates: int


def _prepared(
    candidates: Candidates, references: References, *, tokenize: bool, mode: str, what: str
) -> _Prepared:
    """Checked inputs, tokenized as COCO does (or taken as already tokenized)."""
    if mode not in MODES:
        raise UsageError(f"Unknown caption-metric mode {mode!r}.", f"Use one of: {', '.join(MODES)}.")
    checked = checked_captions(candidates, references, what=what)

    def prepare(text: str) -> str:
        return " ".join(ptb_tokenize(text, parity=mode == "parity")) if tokenize else text

    texts = {item: prepare(text) for item, text in checked.candidates.items()}
    refs = {
        item: tuple(prepare(text) for text in originals) for item, originals in checked.references.items()
    }
    problems = InputProblems(what)
    for item in checked.ids:
        if any(not text.split() for text in refs[item]):
            problems.add("references with no words after tokenization", item)
    problems.raise_if_any("Remove or fix reference captions made only of punctuation.")
    empty = sum(1 for text in texts.values() if not text.split())
    return _Prepared(ids=checked.ids, candidates=texts, references=refs, empty_candidates=empty)


def _require_two_items(prepared: _Prepared, name: str) -> None:
    if len(prepared.ids) < 2:
        problems = InputProblems(name)
        problems.add("caption sets with a single item", prepared.ids[0])
        problems.raise_if_any(
            f"{name} takes its idf from the references of the scored set; with one item every idf is "
            "0 and so is the score. Score the whole set at once."
        )


def _ngrams(tokens: Sequence[str]) -> Counter[tuple[str, ...]]:
    """Counts of every n-gram of orders 1..4."""
    return Counter(
        tuple(tokens[start : start + order])
        for order in range(1, MAX_ORDER + 1)
        for start in range(len(tokens) - order + 1)
    )


# ---- BLEU -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _BleuCounts:
    candidate_length: int
    reference_length: int  # the closest reference length, ties to the shorter
    matches: tuple[int, ...]  # clipped n-gram matches per order
    totals: tuple[int, ...]  # candidate n-grams per order


def _bleu(prepared: _Prepared, mode: str) -> BleuScores:
    counts = {
        item: _bleu_counts(
            prepared.candidates[item].split(), [ref.split() for ref in prepared.references[item]]
        )
        for item in prepared.ids
    }
    candidate_length = sum(count.candidate_length for count in counts.values())
    reference_length = sum(count.reference_length for count in counts.values())
    matches = tuple(sum(count.matches[k] for count in counts.values()) for k in range(MAX_ORDER))
    totals = tuple(sum(count.totals[k] for count in counts.values()) for k in range(MAX_ORDER))
    return BleuScores(
        mode=mode,
        scores=_bleu_scores(matches, totals, candidate_length, reference_length, mode),
        brevity_penalty=_brevity_penalty(candidate_length, reference_length, mode),
        candidate_length=candidate_length,
        reference_length=reference_length,
        items=len(prepared.ids),
        empty_candidates=prepared.empty_candidates,
        per_item={
            item: _bleu_scores(
                count.matches, count.totals, count.candidate_length, count.reference_length, mode
            )
            for item, count in counts.items()
        },
    )


def _bleu_counts(candidate: list[str], references: list[list[str]]) -> _BleuCounts:
    """One item's clipped matches (against the per-n-gram maximum over references) and lengths."""
    candidate_counts = _ngrams(candidate)
    most_in_a_reference: Counter[tuple[str, ...]] = Counter()
    for reference in references:
        most_in_a_reference |= _ngrams(reference)
    matches = [0] * MAX_ORDER
    for gram, count in candidate_counts.items():
        matches[len(gram) - 1] += min(count, most_in_a_reference[gram])
    length = len(candidate)
    closest = min(
        (len(reference) for reference in references), key=lambda ref_len: (abs(ref_len - length), ref_len)
    )
    return _BleuCounts(
        candidate_length=length,
        reference_length=closest,
        matches=tuple(matches),
        totals=tuple(max(0, length - order) for order in range(MAX_ORDER)),
    )


def _bleu_scores(
    matches: Sequence[int], totals: Sequence[int], candidate_length: int, reference_length: int, mode: str
) -> tuple[float, ...]:
    """BLEU-1..4: geometric mean of the first n precisions, times the brevity penalty."""
    penalty = _brevity_penalty(candidate_length, reference_length, mode)
    scores = []
    log_sum = 0.0
    for order in range(MAX_ORDER):
        if mode == "parity":
            log_sum += math.log((matches[order] + _COCO_TINY) / (totals[order] + _COCO_SMALL))
        elif matches[order] == 0 or math.isinf(log_sum):
            log_sum = -math.inf
        else:
            log_sum += math.log(matches[order] / totals[order])
        scores.append(penalty * math.exp(log_sum / (order + 1)))
    return tuple(scores)


def _brevity_penalty(candidate_length: int, reference_length: int, mode: str) -> float:
    if mode == "parity":
        ratio = (candidate_length + _COCO_TINY) / (reference_length + _COCO_SMALL)
        return math.exp(1 - 1 / ratio) if ratio < 1 else 1.0
    if candidate_length >= reference_length:
        return 1.0
    return 0.0 if candidate_length == 0 else math.exp(1 - reference_length / candidate_length)


# ---- ROUGE-L ----------------------------------------------------------------------------------------


def _rouge_l(prepared: _Prepared, mode: str) -> RougeLScores:
    per_item = {
        item: _rouge_l_item(prepared.candidates[item], prepared.references[item], mode)
        for item in prepared.ids
    }
    return RougeLScores(
        mode=mode,
        score=math.fsum(per_item.values()) / len(per_item),
        beta=ROUGE_BETA,
        items=len(per_item),
        empty_candidates=prepared.empty_candidates,
        per_item=per_item,
    )


def _rouge_l_item(candidate: str, references: Sequence[str], mode: str) -> float:
    if mode == "parity":
        tokens = candidate.split(" ")
        pairs = [_lcs_precision_recall(tokens, reference.split(" ")) for reference in references]
        return _f_beta(max(p for p, _ in pairs), max(r for _, r in pairs))
    tokens = candidate.split()
    if not tokens:
        return 0.0
    return max(_f_beta(*_lcs_precision_recall(tokens, reference.split())) for reference in references)


def _lcs_precision_recall(candidate: Sequence[str], reference: Sequence[str]) -> tuple[float, float]:
    common = _lcs_length(candidate, reference)
    return common / len(candidate), common / len(reference)


def _lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    """Length of the longest common subsequence (dynamic programming, one row at a time)."""
    previous = [0] * (len(second) + 1)
    for token in first:
        current = [0]
        for index, other in enumerate(second):
            current.append(
                previous[index] + 1 if token == other else max(previous[index + 1], current[index])
            )
        previous = current
    return previous[-1]


def _f_beta(precision: float, recall: float) -> float:
    if precision == 0 or recall == 0:
        return 0.0
    beta2 = ROUGE_BETA**2
    return (1 + beta2) * precision * recall / (recall + beta2 * precision)


# ---- CIDEr / CIDEr-D --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TfIdf:
    weights: tuple[dict[tuple[str, ...], float], ...]  # per n-gram order
    norms: tuple[float, ...]
    length: int


def _cider(prepared: _Prepared, mode: str, *, clipped: bool, sigma: float | None) -> CiderScores:
    candidate_grams = {item: _ngrams(prepared.candidates[item].split()) for item in prepared.ids}
    reference_grams = {
        item: [_ngrams(ref.split()) for ref in prepared.references[item]] for item in prepared.ids
    }
    document_frequency: Counter[tuple[str, ...]] = Counter()
    for grams in reference_grams.values():
        document_frequency.update(set().union(*grams))
    log_items = math.log(len(prepared.ids))

    def tf_idf(text: str, grams: Counter[tuple[str, ...]]) -> _TfIdf:
        return _tf_idf(grams, len(text.split()), document_frequency, log_items)

    per_item = {}
    for item in prepared.ids:
        candidate = tf_idf(prepared.candidates[item], candidate_grams[item])
        references = [
            tf_idf(text, grams)
            for text, grams in zip(prepared.references[item], reference_grams[item], strict=True)
        ]
        per_order = [0.0] * MAX_ORDER
        for reference in references:
            for order, value in enumerate(_similarity(candidate, reference, clipped=clipped, sigma=sigma)):
                per_order[order] += value
        per_item[item] = 10.0 * (math.fsum(per_order) / MAX_ORDER) / len(references)
    return CiderScores(
        mode=mode,
        variant="CIDEr-D" if clipped else "CIDEr",
        score=math.fsum(per_item.values()) / len(per_item),
        sigma=sigma,
        items=len(per_item),
        empty_candidates=prepared.empty_candidates,
        per_item=per_item,
    )


def _tf_idf(
    grams: Counter[tuple[str, ...]],
    length: int,
    document_frequency: Counter[tuple[str, ...]],
    log_items: float,
) -> _TfIdf:
    """tf times idf per n-gram, with COCO's idf: log(items) - log(max(1, df))."""
    weights: tuple[dict[tuple[str, ...], float], ...] = tuple({} for _ in range(MAX_ORDER))
    for gram, count in grams.items():
        weights[len(gram) - 1][gram] = count * (log_items - math.log(max(1, document_frequency[gram])))
    norms = tuple(math.sqrt(math.fsum(value * value for value in order.values())) for order in weights)
    return _TfIdf(weights=weights, norms=norms, length=length)


def _similarity(candidate: _TfIdf, reference: _TfIdf, *, clipped: bool, sigma: float | None) -> list[float]:
    """Per-order cosine of the tf-idf vectors (CIDEr-D: clipped and length-penalised)."""
    penalty = (
        1.0 if sigma is None else math.exp(-((candidate.length - reference.length) ** 2) / (2 * sigma**2))
    )
    values = []
    for order in range(MAX_ORDER):
        ours, theirs = candidate.weights[order], reference.weights[order]
        dot = math.fsum(
            (min(weight, theirs.get(gram, 0.0)) if clipped else weight) * theirs.get(gram, 0.0)
            for gram, weight in ours.items()
        )
        norm = candidate.norms[order] * reference.norms[order]
        values.append((dot / norm if norm else 0.0) * penalty)
    return values
