"""What each item is given in each setting: instructions, oracle texts, captions and passages.

Everything here that a model writes (translated instructions, CVQA oracle captions, translated
oracle contexts, image captions) is made once per key by the auxiliary model and kept as a table
under ``artefacts/``; everything retrieved is kept under ``artefacts/`` too, with passage ids,
ranks and scores, so a report can be traced back to the exact texts the model under test saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import yaml

from m4build.eval.m4rag.artefacts import ArtefactRequest, Artefacts, make_artefacts
from m4build.eval.m4rag.items import EvalItem
from m4build.eval.m4rag.predict import ItemContext
from m4build.eval.m4rag.retrieval import Retrieved, TextRetriever
from m4build.eval.m4rag.settings import Setting
from m4build.languages import load_languages
from m4build.llm.model import LanguageModel
from m4build.llm.prompts import PromptTemplate
from m4build.progress import NullProgress, ProgressReporter
from m4build.resources import data_path
from m4build.runs import atomic_write_parquet, stable_hash

ORACLE_PREFIX = "The description of the dish: "  # M4-RAG's WorldCuisines oracle context, as released
RELEASED_TRANSLATIONS = ("builders", "prompts", "m4rag", "worldcuisines_mcq_languages.yaml")

RETRIEVAL_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("query", pa.string()),
        ("passage_ids", pa.list_(pa.string())),
        ("ranks", pa.list_(pa.int32())),
        ("scores", pa.list_(pa.float64())),
        ("shards", pa.list_(pa.string())),
    ]
)


class MultimodalRetriever(Protocol):
    """Retrieval from image and question jointly (``m4build.retrieval.multimodal``)."""

    def retrieve(self, items: Sequence[EvalItem], images: Mapping[str, bytes]) -> Retrieved: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class EvalPrompts:
    inference: PromptTemplate
    translate: PromptTemplate
    caption: PromptTemplate
    oracle_caption: PromptTemplate
    judge: PromptTemplate


class ContextBuilder:
    """Builds every item's context for a setting, making each shared artefact at most once."""

    def __init__(
        self,
        items: Sequence[EvalItem],
        images: Mapping[str, bytes],
        auxiliary: LanguageModel,
        prompts: EvalPrompts,
        folder: Path,
        *,
        text_retriever: TextRetriever | None = None,
        multimodal_retriever: MultimodalRetriever | None = None,
        progress: ProgressReporter | None = None,
    ):
        self.items = list(items)
        self.images = images
        self.auxiliary = auxiliary
        self.prompts = prompts
        self.folder = folder
        self.text_retriever = text_retriever
        self.multimodal_retriever = multimodal_retriever
        self.progress = progress or NullProgress()
        self.english_only: dict[str, list[str]] = {}
        self.artefact_errors: dict[str, int] = {}

    def for_setting(self, setting: Setting) -> dict[str, ItemContext]:
        if setting.context == "none":
            return {item.item_id: self._instruction_context(item, setting) for item in self.items}
        if setting.context == "oracle":
            return {item.item_id: self._oracle_context(item, setting) for item in self.items}
        return self._retrieved_contexts(setting)

    # -- instructions ----------------------------------------------------------------------------
    def _instruction_context(self, item: EvalItem, setting: Setting) -> ItemContext:
        if not setting.multilingual_prompt or item.in_english:
            return ItemContext()
        released = self._released.get(item.lang)
        if released is not None:
            labels = {key: value for key, value in released.items() if key != "instruction"}
            return ItemContext(instruction=released["instruction"], labels=labels)
        key = self._instruction_key(item)
        translated = self._instructions.texts.get(key)
        if translated is None:
            return ItemContext(error=f"translating the instruction failed: {self._instructions.errors[key]}")
        return ItemContext(instruction=translated)

    @cached_property
    def _released(self) -> dict[str, dict[str, str]]:
        """M4-RAG's released WorldCuisines instruction translations, by language code."""
        with data_path(*RELEASED_TRANSLATIONS).open(encoding="utf-8") as handle:
            return yaml.safe_load(handle)["languages"]

    def _instruction_key(self, item: EvalItem) -> str:
        return f"{item.lang}:{len(item.options)}"

    @cached_property
    def _instructions(self) -> Artefacts:
        """Instructions for prompt languages without a released translation, via m4rag/translate."""
        requests = [
            ArtefactRequest(
                self._instruction_key(item),
                {
                    "source_language": "English",
                    "target_language": load_languages().get(item.lang).name,
                    "text": english_instruction(self.prompts.inference, item),
                },
            )
            for item in self.items
            if not item.in_english and item.lang not in self._released
        ]
        return self._artefacts("instructions", self.prompts.translate, requests)

    # -- oracle ----------------------------------------------------------------------------------
    def _oracle_context(self, item: EvalItem, setting: Setting) -> ItemContext:
        oracle, error = self.oracle_text(item)
        if error:
            return ItemContext(error=error)
        if setting.multilingual_context and not item.in_english:
            key = self._oracle_translation_key(item, oracle)
            translated = self._oracle_translations.texts.get(key)
            if translated is None:
                return ItemContext(error=f"translating the oracle context failed: {self._oracle_translations.errors[key]}")
            oracle = translated
        return ItemContext(texts=(oracle,))

    def oracle_text(self, item: EvalItem) -> tuple[str, str | None]:
        """The English oracle context: WorldCuisines' dish description, or CVQA's oracle caption."""
        if item.benchmark == "worldcuisines":
            if not item.oracle_context:
                return "", "the food knowledge base has no description of this dish"
            return ORACLE_PREFIX + item.oracle_context, None
        key = base_id(item)
        caption = self._oracle_captions.texts.get(key)
        if caption is None:
            return "", f"writing the oracle caption failed: {self._oracle_captions.errors[key]}"
        return caption, None

    @cached_property
    def _oracle_captions(self) -> Artefacts:
        requests = [
            ArtefactRequest(
                base_id(item),
                {"question": item.question_en, "country": item.country or "", "golden_answer": item.answer_en},
                self.images[item.item_id],
            )
            for item in self.items
            if item.benchmark == "cvqa"
        ]
        return self._artefacts("oracle_captions", self.prompts.oracle_caption, requests)

    def _oracle_translation_key(self, item: EvalItem, oracle: str) -> str:
        return f"{item.lang}:{stable_hash(oracle)}"

    @cached_property
    def _oracle_translations(self) -> Artefacts:
        requests = []
        for item in self.items:
            oracle, error = self.oracle_text(item)
            if error or item.in_english:
                continue
            requests.append(
                ArtefactRequest(
                    self._oracle_translation_key(item, oracle),
                    {
                        "source_language": "English",
                        "target_language": load_languages().get(item.lang).name,
                        "text": oracle,
                    },
                )
            )
        return self._artefacts("oracle_translations", self.prompts.translate, requests)

    # -- retrieval -------------------------------------------------------------------------------
    def _retrieved_contexts(self, setting: Setting) -> dict[str, ItemContext]:
        contexts: dict[str, ItemContext] = {}
        if setting.query == "multimodal":
            if self.multimodal_retriever is None:
                raise AssertionError("the CLI checks that mm-rag has a multimodal retriever")
            retrieved = self.multimodal_retriever.retrieve(self.items, self.images)
            queries = {item.item_id: item.question for item in self.items}
        else:
            if self.text_retriever is None:
                raise AssertionError("the CLI checks that text retrieval has an index")
            queries = {}
            for item in self.items:
                query, error = self._query(item, setting)
                if error:
                    contexts[item.item_id] = ItemContext(error=error)
                else:
                    queries[item.item_id] = query
            by_id = {item.item_id: item for item in self.items}
            retrieved = self.text_retriever.retrieve({key: (by_id[key], text) for key, text in queries.items()})
        self.english_only[setting.name] = retrieved.english_only
        self._write_retrieval(setting, queries, retrieved)
        for item_id, passages in retrieved.passages.items():
            contexts[item_id] = ItemContext(texts=tuple(p.context for p in passages), passages=tuple(passages))
        return contexts

    def _query(self, item: EvalItem, setting: Setting) -> tuple[str, str | None]:
        if setting.query == "oracle":
            return self.oracle_text(item)
        caption = self._captions.texts.get(base_id(item))
        if caption is None:
            return "", f"captioning the image failed: {self._captions.errors[base_id(item)]}"
        return f"{item.question_en}\n{caption}", None

    @cached_property
    def _captions(self) -> Artefacts:
        requests = [
            ArtefactRequest(base_id(item), {"question": item.question_en}, self.images[item.item_id])
            for item in self.items
        ]
        return self._artefacts("captions", self.prompts.caption, requests)

    def _write_retrieval(self, setting: Setting, queries: Mapping[str, str], retrieved: Retrieved) -> None:
        rows = [
            {
                "item_id": item_id,
                "query": queries.get(item_id, ""),
                "passage_ids": [p.id for p in passages],
                "ranks": [p.rank for p in passages],
                "scores": [p.score for p in passages],
                "shards": [p.shard for p in passages],
            }
            for item_id, passages in sorted(retrieved.passages.items())
        ]
        table = pa.Table.from_pylist(rows, schema=RETRIEVAL_SCHEMA)
        atomic_write_parquet(self.folder / f"retrieval-{setting.name}.parquet", table)

    def _artefacts(self, kind: str, prompt: PromptTemplate, requests: list[ArtefactRequest]) -> Artefacts:
        made = make_artefacts(kind, self.folder, self.auxiliary, prompt, requests, self.progress)
        if made.errors:
            self.artefact_errors[kind] = len(made.errors)
        return made


def base_id(item: EvalItem) -> str:
    """CVQA's two prompt languages share one image and one caption: the id without the suffix."""
    for suffix in ("-local", "-en"):
        if item.benchmark == "cvqa" and item.item_id.endswith(suffix):
            return item.item_id[: -len(suffix)]
    return item.item_id


def english_instruction(prompt: PromptTemplate, item: EvalItem) -> str:
    """The English instruction of the inference prompt for this many options: its first paragraph."""
    rendered = prompt.render({"question": "", "options": list(item.options), "layout": item.benchmark})
    return rendered[-1].text.split("\n\n", 1)[0]

