"""A multimodal dual encoder for M4-RAG's ``mm-rag`` setting: passages by text, queries by image and question.

In ``mm-rag`` the top-k passages are retrieved jointly from the item's image and its question with a
multimodal encoder (mmE5 in the paper). This module covers the dual encoders of the transformers
library, models that expose ``get_text_features`` and ``get_image_features`` over one shared space
(CLIP, SigLIP, SigLIP 2 and the like): a passage is embedded by the text tower, a query by both
towers, and the two query vectors are combined by an explicit, recorded rule
(:class:`QueryCombination`). Early-fusion embedders such as mmE5 (an mllama model that reads image and
text in one forward pass) have no separate towers and are refused with a message saying so.

Why truncation is explicit: CLIP's text window is 77 tokens and SigLIP's 64, far less than a
256-token passage, and a position past the window either crashes the model or is silently
dropped. Texts are cut to the window here, the window is recorded, and the index builder counts
how many passages were cut (``count_truncated``).

Vectors are float32 and L2-normalised, so inner product is cosine similarity; on a GPU the model
runs in fp16 and its outputs are cast back before normalising.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from m4build.errors import InputFileError, UsageError
from m4build.retrieval.dense import model_revision, pick_device

# Model types whose text tower was trained on texts padded to the full window (their model cards
# say to call the tokenizer with padding="max_length"); the others pad to the longest in a batch.
PAD_TO_WINDOW = frozenset({"siglip", "siglip2"})
# Tokenizers without a length limit report a huge ``model_max_length`` (1e30); above this it means none.
NO_LIMIT = 1_000_000
_EPS = 1e-12
_IMAGE_HINT = (
    "Pass each image as the encoded bytes of a file PIL can read (PNG, JPEG, WebP, ...), e.g. the "
    "'bytes' of a datasets Image column loaded with decode=False; fix or drop the named item."
)


def _pil() -> Any:
    """PIL.Image, or an error naming the package to install."""
    try:
        from PIL import Image
    except ImportError:
        raise UsageError(
            "multimodal retrieval decodes images with Pillow", "Install it with: pip install pillow"
        ) from None
    return Image


@dataclass(frozen=True)
class QueryCombination:
    """How an image vector and a question vector become one query vector.

    ``query = l2(image_weight * l2(image) + text_weight * l2(text))``, with ``l2`` the L2
    normalisation. Each side is normalised first so that neither dominates by norm alone; with equal
    weights (the default) the query is the normalised mean of the two unit vectors, which points the
    same way as their normalised sum. A weight of 0 gives an image-only or question-only query.
    """

    image_weight: float = 0.5
    text_weight: float = 0.5

    RULE = "l2(image_weight * l2(image) + text_weight * l2(text))"

    def __post_init__(self) -> None:
        weights = (self.image_weight, self.text_weight)
        if not all(math.isfinite(w) and w >= 0 for w in weights) or not any(weights):
            raise UsageError(
                f"invalid query combination weights {weights}",
                "Give two finite, non-negative weights, at least one of them above 0 (default 0.5 and 0.5).",
            )

    def combine(self, image: np.ndarray, text: np.ndarray) -> np.ndarray:
        """One unit query vector per row of ``image`` and ``text`` (arrays of the same shape)."""
        return _unit_rows(self.image_weight * _unit_rows(image) + self.text_weight * _unit_rows(text))

    def describe(self) -> dict[str, Any]:
        return {"rule": self.RULE, **asdict(self)}

    @classmethod
    def from_description(cls, description: dict[str, Any]) -> QueryCombination:
        """The combination a manifest recorded (see :meth:`describe`)."""
        if description.get("rule") != cls.RULE:
            raise InputFileError(
                f"unknown query combination rule {description.get('rule')!r}",
                f"This m4build combines queries as {cls.RULE!r}; rebuild the multimodal index with it.",
            )
        return cls(float(description["image_weight"]), float(description["text_weight"]))


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero and then scores 0 against every passage)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.maximum(norms, _EPS), dtype=np.float32)


def decode_image(data: bytes, name: str) -> Any:
    """An RGB ``PIL.Image`` from encoded bytes; an error naming ``name`` when they are not an image."""
    image_module = _pil()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputFileError(f"{name} is a {type(data).__name__}, not encoded image bytes", _IMAGE_HINT)
    try:
        with image_module.open(io.BytesIO(data)) as image:
            image.load()  # a truncated file opens fine and only fails when its pixels are read
            return image.convert("RGB")
    except image_module.UnidentifiedImageError:
        raise InputFileError(
            f"{name} cannot be decoded: not an image format PIL knows", _IMAGE_HINT
        ) from None
    except (OSError, SyntaxError, ValueError, image_module.DecompressionBombError) as exc:
        raise InputFileError(
            f"{name} cannot be decoded as an image ({type(exc).__name__}: {exc})", _IMAGE_HINT
        ) from None


def _batches(count: int, size: int) -> Iterator[slice]:
    for start in range(0, count, size):
        yield slice(start, min(start + size, count))


def _features(output: Any) -> torch.Tensor:
    """The projected embeddings: transformers 5 returns them as ``pooler_output``, 4.x as a tensor."""
    return output if isinstance(output, torch.Tensor) else output.pooler_output


class MultimodalEncoder:
    """A CLIP-style dual encoder: unit vectors for passages (text tower) and image+question queries.

    Built by :func:`load_multimodal_encoder`; ``combination`` is the rule for queries.
    """

    def __init__(
        self,
        model_id: str,
        model: Any,
        tokenizer: Any,
        image_processor: Any,
        *,
        revision: str,
        device: str,
        combination: QueryCombination | None = None,
    ):
        self.model_id = model_id
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.revision = revision
        self.device = device
        self.combination = combination or QueryCombination()
        self.architecture = str(model.config.model_type)
        self.max_text_tokens = _text_window(model, tokenizer, model_id)
        self.text_padding: str | bool = "max_length" if self.architecture in PAD_TO_WINDOW else True
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        """The size of the shared space (measured once: CLIP projects, SigLIP keeps the hidden size)."""
        if self._dimension is None:
            self._dimension = int(self.encode_texts(["dimension"]).shape[1])
        return self._dimension

    # -- towers -----------------------------------------------------------------------------------
    def encode_texts(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Unit vectors of the text tower, each text cut to ``max_text_tokens`` (special tokens included)."""
        texts = list(texts)
        return self._stack([self._text_batch(texts[part]) for part in _batches(len(texts), batch_size)])

    def encode_images(
        self, images: Sequence[bytes], batch_size: int = 32, *, names: Sequence[str] | None = None
    ) -> np.ndarray:
        """Unit vectors of the image tower for encoded images; an undecodable one is named in the error."""
        labels = _labels(len(images), names)
        batches = []
        for part in _batches(len(images), batch_size):
            decoded = [decode_image(data, label) for data, label in zip(images[part], labels[part])]
            batches.append(self._image_batch(decoded))
        return self._stack(batches)

    # -- what retrieval calls ---------------------------------------------------------------------
    def encode_passages(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Passage vectors: the text tower, no prefix (CLIP-style models have no query/passage markers)."""
        return self.encode_texts(texts, batch_size)

    def encode_queries(
        self,
        images: Sequence[bytes],
        texts: Sequence[str],
        batch_size: int = 32,
        *,
        names: Sequence[str] | None = None,
    ) -> np.ndarray:
        """One unit vector per (image, question) pair, combined by ``self.combination``.

        ``names`` (e.g. benchmark item ids) label the items in error messages; positions otherwise.
        """
        if isinstance(images, (bytes, bytearray)) or isinstance(texts, str):
            raise UsageError(
                "encode_queries takes a list of images and a list of questions",
                "Wrap a single query in lists: encode_queries([image], [question]).",
            )
        if len(images) != len(texts):
            raise UsageError(
                f"{len(images)} images but {len(texts)} questions",
                "Give one question per image (an empty string for an image-only query).",
            )
        image_vectors = self.encode_images(images, batch_size, names=names)
        return self.combination.combine(image_vectors, self.encode_texts(texts, batch_size))

    def count_truncated(self, texts: Sequence[str], batch_size: int = 1024) -> int:
        """How many texts are longer than the text window, and so are cut before embedding."""
        cut = 0
        texts = list(texts)
        for part in _batches(len(texts), batch_size):
            encoded = self.tokenizer(texts[part], truncation=False, verbose=False)["input_ids"]
            cut += sum(len(ids) > self.max_text_tokens for ids in encoded)
        return cut

    def describe(self) -> dict[str, Any]:
        """What determines the passage vectors; the index manifest records it and compares it on reuse."""
        return {
            "model": self.model_id,
            "revision": self.revision,
            "architecture": self.architecture,
            "dimension": self.dimension,
            "metric": "ip",
            "normalize": True,
            "max_text_tokens": self.max_text_tokens,
            "text_padding": "max_length" if self.text_padding == "max_length" else "longest",
        }

    # -- forward passes ---------------------------------------------------------------------------
    @torch.inference_mode()
    def _text_batch(self, texts: list[str]) -> np.ndarray:
        batch = self.tokenizer(
            texts,
            padding=self.text_padding,
            truncation=True,
            max_length=self.max_text_tokens,
            return_tensors="pt",
        )
        # Only what the text tower takes: a BERT-style tokenizer also returns token_type_ids.
        inputs = {key: batch[key].to(self.device) for key in ("input_ids", "attention_mask") if key in batch}
        return _unit_rows(_features(self.model.get_text_features(**inputs)).float().cpu().numpy())

    @torch.inference_mode()
    def _image_batch(self, images: list[Any]) -> np.ndarray:
        pixels = self.image_processor(images=images, return_tensors="pt")["pixel_values"]
        pixels = pixels.to(self.device, dtype=self.model.dtype)
        return _unit_rows(_features(self.model.get_image_features(pixel_values=pixels)).float().cpu().numpy())

    def _stack(self, batches: list[np.ndarray]) -> np.ndarray:
        if not batches:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(batches), dtype=np.float32)


def _labels(count: int, names: Sequence[str] | None) -> list[str]:
    if names is None:
        return [f"query image {position}" for position in range(count)]
    if len(names) != count:
        raise UsageError(f"{len(names)} names for {count} images", "Give one name per image, or none.")
    return [f"query image {position} ({name!r})" for position, name in enumerate(names)]


def _text_window(model: Any, tokenizer: Any, model_id: str) -> int:
    """The longest text the text tower takes: its position table, or the tokenizer's limit if smaller."""
    config = getattr(model.config, "text_config", None) or model.config
    limits = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    known = [int(limit) for limit in limits if isinstance(limit, int) and 0 < limit < NO_LIMIT]
    if not known:
        raise UsageError(
            f"cannot tell the text window of {model_id!r}: neither its text config nor its tokenizer gives one",
            "Set max_position_embeddings in the model's text config or model_max_length in its tokenizer.",
        )
    return min(known)


def load_multimodal_encoder(
    model: str, *, combination: QueryCombination | None = None, device: str | None = None
) -> MultimodalEncoder:
    """A dual encoder from a Hub id or local folder, on the GPU in fp16 when there is one, else the CPU.

    The folder needs the model, its tokenizer and its image processor (``preprocessor_config.json``),
    as every CLIP and SigLIP repo on the Hub has.
    """
    try:
        from transformers import AutoImageProcessor, AutoModel, AutoTokenizer
    except ImportError:
        raise UsageError(
            "multimodal retrieval needs transformers", "Install it with: pip install transformers"
        ) from None
    loaded = _load_part(AutoModel, model)
    if not (hasattr(loaded, "get_text_features") and hasattr(loaded, "get_image_features")):
        raise UsageError(
            f"{model!r} ({type(loaded).__name__}) is not a dual encoder: it has no get_text_features and "
            "get_image_features",
            "Use a CLIP- or SigLIP-style model. Early-fusion embedders such as mmE5 (mllama) embed image "
            "and text in one pass and are not supported by this encoder.",
        )
    tokenizer = _load_part(AutoTokenizer, model)
    image_processor = _load_part(AutoImageProcessor, model)
    device = device or pick_device()
    if device.startswith("cuda"):
        loaded.half()
    loaded.to(device).eval()
    return MultimodalEncoder(
        model,
        loaded,
        tokenizer,
        image_processor,
        revision=model_revision(model),
        device=device,
        combination=combination,
    )


def _load_part(auto_class: Any, model: str) -> Any:
    """``auto_class.from_pretrained(model)``, with a failure named (loading fails in many library-specific ways)."""
    try:
        return auto_class.from_pretrained(model)
    except Exception as exc:  # noqa: BLE001
        raise UsageError(
            f"could not load the {auto_class.__name__} of {model!r}: {type(exc).__name__}: {exc}",
            "Pass a local folder with the model, its tokenizer and preprocessor_config.json, or a Hub id "
            "that is in the HF cache (these machines are offline).",
        ) from None
