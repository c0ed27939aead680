"""BERTScore (Zhang et al., ICLR 2020) over any Hugging Face ``transformers`` encoder.

Definition: embed candidate and reference with the same encoder layer, L2-normalise every token
vector, and match greedily by cosine similarity: precision is the (idf-)weighted mean over candidate
tokens of their best similarity to a reference token, recall the same over reference tokens, and F1
their harmonic mean (0 when P + R = 0). Optional idf weights come from the references:
idf(t) = log((M + 1) / (df(t) + 1)) over the M reference sentences, log(M + 1) for a token in none.
Optional baseline rescaling maps each of P, R, F1 to (x - b) / (1 - b), with b the score of
unrelated sentence pairs, so that scores spread over a readable range.

Peer code: Tiiiger/bert_score (``bert_score/utils.py``: ``sent_encode``, ``get_idf_dict``,
``greedy_cos_idf``, ``model2layers``; ``bert_score/score.py``), which RAVENEA calls through
``evaluate.load("bertscore")`` with ``model_type="bert-base-uncased"`` (yfyuan01/RAVENEA
``src/helper.py``: no idf, no rescaling, means of per-item P, R and F1). What we share with it, to
reproduce its numbers:

- tokenization of the stripped text with the model's special tokens, truncated to the model's
  maximum length;
- the tokenizer's CLS and SEP tokens ([CLS]/[SEP], <s>/</s>) weigh 0 but stay in the pool a token
  can be matched to; idf comes from all reference sentences, repeats included;
- ``layer`` k is ``hidden_states[k]`` (0 = the embedding output), which is what bert_score gets by
  cutting the model to k layers; it picks k per model, e.g. 9 for bert-base-uncased (RAVENEA's
  setting) and 17 for roberta-large (its English default). We default to the last layer, so pass
  ``layer`` to match it;
- a candidate or reference without real tokens makes P = R = F1 = 0; corpus scores are means of
  item scores (not F1 of the mean P and R);
- baselines are given by the user: bert_score ships them in ``rescale_baseline/<lang>/<model>.tsv``
  (row k for layer k, columns P, R, F); they apply after the choice among references.

Where we differ (``mode``), and other differences:

==============================  ======================================  =================================
                                bert_score (``mode="parity"``)          ours (``mode="default"``)
==============================  ======================================  =================================
several references per item     P, R and F1 each the maximum over the   P, R and F1 of the reference
                                references, possibly from different     with the best F1
                                ones
==============================  ======================================  =================================

bert_score multiplies each batch's similarity matrix by the padding mask before taking maxima, so a
token whose real similarities are all negative matches padding (0) and its score depends on which
sentences share its batch; we score every pair unpadded. A candidate whose idf weights all vanish
(every token of it is in every reference) gets P = 0 here, NaN there; idf over a single reference
sentence, where that always happens, is refused. bert_score also tokenizes RoBERTa/GPT-2 with
``add_prefix_space=True`` and uses the slow tokenizer; we call the tokenizer as given.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from m4build.errors import M4BuildError, UsageError
from m4build.metrics.captions import Candidates, References, checked_captions
from m4build.metrics.checks import InputProblems

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

Mode = Literal["default", "parity"]
MODES: tuple[str, ...] = ("default", "parity")
DEFAULT_BATCH_SIZE = 32


class PrecisionRecallF1(NamedTuple):
    """BERTScore's three numbers for one candidate (or their means)."""

    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class BertScoreBaseline:
    """Scores of unrelated sentence pairs for one model and layer, used to rescale (x - b) / (1 - b)."""

    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class BertScoreResult:
    """Mean BERTScore P, R and F1 over items, each item's, and how they were computed."""

    mode: str
    precision: float
    recall: float
    f1: float
    model: str
    layer: int
    idf: bool
    baseline: BertScoreBaseline | None
    items: int
    empty_candidates: int
    per_item: dict[str, PrecisionRecallF1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "model": self.model,
            "layer": self.layer,
            "idf": self.idf,
            "baseline": None if self.baseline is None else asdict(self.baseline),
            "items": self.items,
            "empty_candidates": self.empty_candidates,
            "per_item": {item: scores._asdict() for item, scores in self.per_item.items()},
        }


@dataclass(frozen=True)
class _Encoded:
    """One sentence: its token ids and their L2-normalised vectors (special tokens included)."""

    token_ids: tuple[int, ...]
    vectors: np.ndarray


class BertScorer:
    """BERTScore with one encoder and layer; ``score`` compares candidates with references."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        layer: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: str | None = None,
        model_name: str | None = None,
    ) -> None:
        self._model = model.eval() if device is None else model.to(device).eval()
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        layers = model.config.num_hidden_layers
        if layer is not None and not 0 <= layer <= layers:
            raise UsageError(f"Layer {layer} does not exist in a {layers}-layer model.", f"Pick 0..{layers}.")
        self.layer = layers if layer is None else layer
        self.model_name = model_name or getattr(model.config, "_name_or_path", "") or type(model).__name__
        limits = [tokenizer.model_max_length, getattr(model.config, "max_position_embeddings", None)]
        self._max_length = min((limit for limit in limits if limit), default=None)
        self._special_ids = frozenset(
            token for token in (tokenizer.cls_token_id, tokenizer.sep_token_id) if token is not None
        )

    @classmethod
    def from_pretrained(
        cls,
        model_name_or_path: str,
        *,
        layer: int | None = None,
        revision: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: str | None = None,
    ) -> BertScorer:
        """Load an encoder and its tokenizer from the Hub cache or a local folder."""
        from transformers import AutoModel, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(model_name_or_path, revision=revision)
            model = AutoModel.from_pretrained(model_name_or_path, revision=revision)
        except (OSError, ValueError) as error:  # not cached offline, no such folder, malformed repo id
            raise M4BuildError(
                f"Cannot load the BERTScore model {model_name_or_path!r}: {error}",
                "Download it first (huggingface-cli download MODEL) or pass a local model folder.",
            ) from error
        return cls(
            model, tokenizer, layer=layer, batch_size=batch_size, device=device, model_name=model_name_or_path
        )

    def score(
        self,
        candidates: Candidates,
        references: References,
        *,
        idf: bool = False,
        baseline: BertScoreBaseline | None = None,
        mode: Mode = "default",
    ) -> BertScoreResult:
        """BERTScore of each candidate against its references, and the means (module docstring)."""
        if mode not in MODES:
            raise UsageError(f"Unknown BERTScore mode {mode!r}.", f"Use one of: {', '.join(MODES)}.")
        checked = checked_captions(candidates, references, what="BERTScore")
        all_references = [text for item in checked.ids for text in checked.references[item]]
        if idf and len(all_references) < 2:
            problems = InputProblems("BERTScore with idf")
            problems.add("reference sets with a single sentence", checked.ids[0])
            problems.raise_if_any(
                "idf comes from the references; with one sentence every token's idf is log(2/2) = 0. "
                "Score the whole set at once, or pass idf=False."
            )
        encoded = self._encode([*checked.candidates.values(), *all_references])
        weights = self._weights(encoded, all_references if idf else None)
        per_item = {}
        for item in checked.ids:
            candidate = encoded[checked.candidates[item]]
            pairs = [self._pair(candidate, encoded[text], weights) for text in checked.references[item]]
            per_item[item] = _rescaled(_best(pairs, mode), baseline)
        return BertScoreResult(
            mode=mode,
            precision=_mean(scores.precision for scores in per_item.values()),
            recall=_mean(scores.recall for scores in per_item.values()),
            f1=_mean(scores.f1 for scores in per_item.values()),
            model=self.model_name,
            layer=self.layer,
            idf=idf,
            baseline=baseline,
            items=len(per_item),
            empty_candidates=sum(1 for text in checked.candidates.values() if self._is_empty(encoded[text])),
            per_item=per_item,
        )

    def _pair(
        self, candidate: _Encoded, reference: _Encoded, weights: Callable[[_Encoded], np.ndarray]
    ) -> PrecisionRecallF1:
        """One candidate against one reference; a side without real tokens scores 0 (as bert_score)."""
        if self._is_empty(candidate) or self._is_empty(reference):
            return PrecisionRecallF1(0.0, 0.0, 0.0)
        return greedy_match(candidate.vectors @ reference.vectors.T, weights(candidate), weights(reference))

    def _is_empty(self, sentence: _Encoded) -> bool:
        return all(token in self._special_ids for token in sentence.token_ids)

    def _encode(self, sentences: Sequence[str]) -> dict[str, _Encoded]:
        """Every distinct sentence's token vectors, computed in batches of similar length."""
        import torch

        unique = sorted(set(sentences), key=lambda text: (-len(text), text))
        encoded = {}
        with torch.no_grad():
            for start in range(0, len(unique), self._batch_size):
                batch = unique[start : start + self._batch_size]
                inputs = self._tokenizer(
                    [text.strip() for text in batch],
                    padding=True,
                    truncation=True,
                    max_length=self._max_length,
                    return_tensors="pt",
                ).to(self._model.device)
                hidden = self._model(**inputs, output_hidden_states=True).hidden_states[self.layer]
                for row, text in enumerate(batch):
                    encoded[text] = _normalised(
                        inputs["input_ids"][row], inputs["attention_mask"][row], hidden[row]
                    )
        return encoded

    def _weights(
        self, encoded: Mapping[str, _Encoded], idf_sentences: Sequence[str] | None
    ) -> Callable[[_Encoded], np.ndarray]:
        """A function giving each token of an encoded sentence its weight (0 for special tokens)."""
        if idf_sentences is None:
            idf_of: dict[int, float] = {}
            unseen = 1.0
        else:
            idf_of, unseen = inverse_document_frequency([encoded[text].token_ids for text in idf_sentences])

        def weights(sentence: _Encoded) -> np.ndarray:
            return np.array(
                [
                    0.0 if token in self._special_ids else idf_of.get(token, unseen)
                    for token in sentence.token_ids
                ]
            )

        return weights


def greedy_match(
    similarity: np.ndarray, candidate_weights: np.ndarray, reference_weights: np.ndarray
) -> PrecisionRecallF1:
    """BERTScore's greedy matching over a candidate-by-reference token similarity matrix.

    Precision: weighted mean over candidate tokens (rows) of their row maximum; recall: weighted
    mean over reference tokens (columns) of their column maximum. A side whose weights sum to 0 gets
    0, and F1 is 0 when P + R = 0.
    """
    precision = _weighted_mean(similarity.max(axis=1), candidate_weights)
    recall = _weighted_mean(similarity.max(axis=0), reference_weights)
    total = precision + recall
    return PrecisionRecallF1(precision, recall, 2 * precision * recall / total if total else 0.0)


def inverse_document_frequency(documents: Sequence[Sequence[int]]) -> tuple[dict[int, float], float]:
    """bert_score's idf over token-id documents: log((M+1)/(df+1)), and log(M+1) for unseen tokens."""
    count = len(documents)
    frequency = Counter(token for document in documents for token in set(document))
    return {token: math.log((count + 1) / (df + 1)) for token, df in frequency.items()}, math.log(count + 1)


def _normalised(token_ids: torch.Tensor, mask: torch.Tensor, hidden: torch.Tensor) -> _Encoded:
    keep = mask.bool()
    vectors = hidden[keep].double().cpu().numpy()
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return _Encoded(token_ids=tuple(token_ids[keep].tolist()), vectors=vectors / np.maximum(norms, 1e-12))


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> float:
    total = float(weights.sum())
    return float((values * weights).sum() / total) if total else 0.0


def _best(pairs: Sequence[PrecisionRecallF1], mode: str) -> PrecisionRecallF1:
    """One score from several references: the best-F1 reference, or (parity) each maximum."""
    if mode == "parity":
        return PrecisionRecallF1(*(max(values) for values in zip(*pairs, strict=True)))
    return max(pairs, key=lambda scores: scores.f1)


def _rescaled(scores: PrecisionRecallF1, baseline: BertScoreBaseline | None) -> PrecisionRecallF1:
    if baseline is None:
        return scores
    return PrecisionRecallF1(
        (scores.precision - baseline.precision) / (1 - baseline.precision),
        (scores.recall - baseline.recall) / (1 - baseline.recall),
        (scores.f1 - baseline.f1) / (1 - baseline.f1),
    )


def _mean(values: Iterable[float]) -> float:
    listed = list(values)
    return math.fsum(listed) / len(listed)
