"""The M4-RAG evaluation settings: what context the model under test is given, and how it is found.

The paper compares a VLM answering from the image alone with the same VLM given an oracle context
(the answer's own description) and given retrieved passages, with English and translated prompts
and contexts. Each setting is data here, so the runner has one code path and the report one table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from m4build.errors import UsageError

Context = Literal["none", "oracle", "retrieved"]
Query = Literal["oracle", "caption", "multimodal"]
BASELINE = "no-rag"


@dataclass(frozen=True)
class Setting:
    name: str
    context: Context
    query: Query | None = None  # how passages are retrieved, for context == "retrieved"
    multilingual_prompt: bool = False  # the instruction in the item's language
    multilingual_context: bool = False  # the oracle context translated into the item's language
    description: str = ""

    @property
    def is_rag(self) -> bool:
        """Settings that give context, compared with ``no-rag`` for retention and correction."""
        return self.context != "none"


SETTINGS: dict[str, Setting] = {
    setting.name: setting
    for setting in (
        Setting("no-rag", "none", description="question and image only"),
        Setting(
            "no-rag-multilingual-prompt",
            "none",
            multilingual_prompt=True,
            description="no context; the instruction in the item's language",
        ),
        Setting("oracle", "oracle", description="the oracle context, in English"),
        Setting(
            "oracle-multilingual",
            "oracle",
            multilingual_context=True,
            description="the oracle context translated into the item's language",
        ),
        Setting(
            "text-rag-oracle-query",
            "retrieved",
            query="oracle",
            description="top-k passages retrieved with the oracle context as the query",
        ),
        Setting(
            "text-rag-caption-query",
            "retrieved",
            query="caption",
            description="top-k passages retrieved with the question and a generated image caption",
        ),
        Setting(
            "mm-rag",
            "retrieved",
            query="multimodal",
            description="top-k passages retrieved from image and question with a multimodal encoder",
        ),
    )
}


def parse_settings(names: list[str]) -> list[Setting]:
    """Settings in the paper's order; unknown names are refused with the valid ones."""
    unknown = [name for name in names if name not in SETTINGS]
    if unknown:
        raise UsageError(
            f"Unknown setting(s): {', '.join(unknown)}.", f"Valid settings: {', '.join(SETTINGS)}."
        )
    if not names:
        raise UsageError("No setting was given.", f"Pass --setting with some of: {', '.join(SETTINGS)}.")
    return [setting for name, setting in SETTINGS.items() if name in names]
