"""Cultural captions: what a VLM says about each image's culture, the query for its candidates.

Captions are made through ``m4build.llm`` with the versioned ``ravenea/cultural_caption`` prompt,
so they are cached, budgeted and retried, and each keeps the model and prompt version. A model
that declines (a refusal from the provider, or an answer that only apologises) is recorded as a
failed caption for that image, which then gets no candidates; the run reports how many and which.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from m4build.llm.messages import ImagePart
from m4build.llm.model import GenerationRequest, LanguageModel
from m4build.llm.prompts import PromptTemplate
from m4build.pipelines.ravenea.inputs import ImageInstance
from m4build.progress import NullProgress, ProgressReporter
from m4build.text.reasoning import strip_reasoning

CAPTION_PROMPT = "ravenea/cultural_caption"
MIN_WORDS = 5
# Openings of answers that decline instead of describing; a caption never starts this way.
_REFUSAL = re.compile(
    r"^\s*(i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i am unable|i'm unable|unfortunately, i|as an ai)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Caption:
    file_name: str
    text: str | None
    error: str | None
    provenance: dict[str, str]


def caption_images(
    model: LanguageModel,
    prompt: PromptTemplate,
    instances: Sequence[ImageInstance],
    progress: ProgressReporter | None = None,
) -> list[Caption]:
    """One caption (or one recorded failure) per instance, in the instances' order."""
    progress = progress or NullProgress()
    requests = (
        GenerationRequest.from_prompt(prompt, {"country": item.country or None}, images=[ImagePart.from_bytes(item.image)])
        for item in instances
    )
    captions: dict[int, Caption] = {}
    with progress.task("captions", total=len(instances)) as advance:
        for index, generation in model.generate_many(requests):
            text = strip_reasoning(generation.text) if generation.ok else ""
            error = generation.error or refusal(text)
            captions[index] = Caption(
                instances[index].file_name,
                None if error else text,
                error,
                {"model": model.name, **prompt.provenance},
            )
            advance(1)
    return [captions[index] for index in range(len(instances))]


def refusal(text: str) -> str | None:
    """Why ``text`` is not a caption, or ``None`` when it is one."""
    if _REFUSAL.match(text):
        return f"the model declined: {text[:80]!r}"
    if len(text.split()) < MIN_WORDS:
        return f"the caption is too short to search with: {text!r}"
    return None
