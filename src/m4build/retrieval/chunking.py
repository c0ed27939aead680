"""Sections to passages, counted in tokens of the embedder's own tokenizer.

Why the embedder's tokenizer: a passage longer than the model's window is silently truncated by
the model, and token counts differ between tokenizers by 2-3x across scripts (a Thai or Amharic
sentence is many more XLM-R pieces than BERT pieces), so a character budget would either waste
the window or overflow it. Windows of ``size`` tokens advance by ``size - overlap``; the passage
text is the exact slice of the section text those tokens came from (offset mapping), so nothing is
re-detokenised.

What is stored and what is embedded. ``passages.parquet`` stores the passage ``text`` as it reads
in the article, with ``title`` and ``section_path`` beside it. What the model sees is
``embed_text``: the title and section path on a first line (a passage in "History" of "Matryoshka
doll" rarely names the doll), then the text. It is not stored because it is a pure function of
stored columns (``embed_text(title, section_path, text)``), so a published index stays small and
cannot disagree with its passages; the model's passage prefix is added at encode time and
recorded in the manifest. BM25 indexes the same ``embed_text``.

The header plus prefix take room in the model's window, so the body budget per section is
``min(size, max_seq_length - header tokens - 2 special tokens)``: no passage is ever truncated by
the model. Cuts are moved back to the nearest word start (whitespace before a token) so that no
passage begins or ends inside a word, except in scripts written without spaces. The size actually used is per section; the manifest records the recipe values and the
model's window.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

# The body of a passage never gets fewer tokens than this, however long a title and heading are.
MIN_BODY_TOKENS = 32
MAX_WORD_PIECES = 16  # how far a cut may move back to reach a word boundary
SPECIAL_TOKENS = 2  # [CLS]/[SEP] or <s>/</s> that the model adds around every input

PASSAGE_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("wiki", pa.string()),
        ("language", pa.string()),
        ("page_id", pa.int64()),
        ("revision_id", pa.int64()),
        ("section_index", pa.int32()),
        ("chunk", pa.int32()),
        ("title", pa.string()),
        ("section_path", pa.list_(pa.string())),
        ("text", pa.string()),
    ]
)


class Tokenizer(Protocol):
    """The part of a Hugging Face tokenizer that chunking needs."""

    def __call__(self, text: str, **kwargs: Any) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class ChunkSettings:
    size: int
    overlap: int
    max_seq_length: int  # the model's window, in tokens including special tokens
    passage_prefix: str = ""


def passage_id(wiki: str, page_id: int, revision_id: int, section_index: int, chunk: int) -> str:
    """The stable id of a passage: ``{wiki}:{page_id}:{revision_id}:{section_index}:{chunk}``."""
    return f"{wiki}:{page_id}:{revision_id}:{section_index}:{chunk}"


def header(title: str, section_path: Sequence[str]) -> str:
    """``Title > Section > Subsection``: what tells the model where a passage comes from."""
    return " > ".join([title, *section_path])


def embed_text(title: str, section_path: Sequence[str], text: str) -> str:
    """The text that is embedded (after the model's passage prefix) and indexed by BM25."""
    return f"{header(title, section_path)}\n{text}"


def embed_texts(passages: pa.Table) -> list[str]:
    """``embed_text`` of every row of a passages table, in row order (what every shard indexes)."""
    return [
        embed_text(title, path or [], text)
        for title, path, text in zip(
            passages.column("title").to_pylist(),
            passages.column("section_path").to_pylist(),
            passages.column("text").to_pylist(),
        )
    ]


def _token_spans(tokenizer: Tokenizer, text: str) -> list[tuple[int, int]]:
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    return [tuple(span) for span in encoded["offset_mapping"]]


def _snap(spans: Sequence[tuple[int, int]], cut: int, floor: int) -> int:
    """Move a cut at token ``cut`` back to the start of its word, staying above token ``floor``.

    A word starts where whitespace precedes the token. Scripts without spaces never show one, so
    after ``MAX_WORD_PIECES`` tokens the cut stays where it was (a word is rarely longer).
    """
    for index in range(cut, max(floor, cut - MAX_WORD_PIECES), -1):
        if spans[index][0] > spans[index - 1][1]:
            return index
    return cut


def _windows(spans: Sequence[tuple[int, int]], size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """Token windows ``[start, end)`` of at most ``size`` tokens that cut between words where they can.

    Each window starts ``overlap`` tokens before the previous one ended; every window starts after
    the previous one, so the walk always ends, and the last one ends at the last token.
    """
    count = len(spans)
    start = 0
    while True:
        end = min(start + size, count)
        if end < count:
            end = _snap(spans, end, start)
        yield start, end
        if end == count:
            return
        start = _snap(spans, max(end - overlap, start + 1), start)


class Chunker:
    """Cuts section records into passage records; one instance per model tokenizer."""

    def __init__(self, tokenizer: Tokenizer, settings: ChunkSettings):
        self.tokenizer = tokenizer
        self.settings = settings

    def body_budget(self, title: str, section_path: Sequence[str]) -> int:
        """Tokens left for the passage body once prefix, header and special tokens are in the window."""
        head = len(
            _token_spans(self.tokenizer, f"{self.settings.passage_prefix}{header(title, section_path)}\n")
        )
        room = self.settings.max_seq_length - head - SPECIAL_TOKENS
        return max(MIN_BODY_TOKENS, min(self.settings.size, room))

    def chunks(self, text: str, budget: int) -> list[str]:
        """The non-empty passage texts of one section."""
        spans = _token_spans(self.tokenizer, text)
        if not spans:
            return []
        overlap = min(self.settings.overlap, budget // 2)
        pieces = (
            text[spans[start][0] : spans[end - 1][1]].strip()
            for start, end in _windows(spans, budget, overlap)
        )
        return [piece for piece in pieces if piece]

    def run(self, sections: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
        """Passages of every section with text; sections and chunks without text are dropped."""
        for section in sections:
            text = section["text"] or ""
            if not text.strip():
                continue
            path = list(section["section_path"] or [])
            budget = self.body_budget(section["title"], path)
            for number, piece in enumerate(self.chunks(text, budget)):
                yield {
                    "id": passage_id(
                        section["wiki"],
                        section["page_id"],
                        section["revision_id"],
                        section["section_index"],
                        number,
                    ),
                    "wiki": section["wiki"],
                    "language": section["language"],
                    "page_id": section["page_id"],
                    "revision_id": section["revision_id"],
                    "section_index": section["section_index"],
                    "chunk": number,
                    "title": section["title"],
                    "section_path": path,
                    "text": piece,
                }


def passages_table(passages: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Passages in article order (wiki, page, section, chunk): a stable row order for every shard."""
    rows = sorted(
        passages, key=lambda r: (r["wiki"], r["page_id"], r["revision_id"], r["section_index"], r["chunk"])
    )
    return pa.Table.from_pylist(rows, schema=PASSAGE_SCHEMA)
