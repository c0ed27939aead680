"""RAVENEA's downstream tasks, with and without the top retrieved document, through the model layer.

- **cVQA**: the image, the question and lettered options (``ravenea/cvqa``); the answer is the
  letter on the prompt's required ``Answer: X`` line (else the last standalone option letter of the
  final answer); accuracy over the cVQA images.
- **cIC**: a one-sentence culture-aware caption (``ravenea/cic``), scored with RegionScore against
  the image's country and, where human captions exist, ROUGE-L and CIDEr-D against them.

"With retrieval" gives the model the text of the top-ranked candidate of the evaluated retriever.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from m4build.eval.ravenea.data import RaveneaData
from m4build.llm.messages import ImagePart
from m4build.llm.model import GenerationRequest, LanguageModel
from m4build.llm.prompts import load_prompt
from m4build.metrics.captions import caption_scores
from m4build.metrics.region import region_score
from m4build.metrics.trec import Run
from m4build.text.reasoning import strip_reasoning

LETTERS = "ABCDEFGH"
_ANSWER_LINE = re.compile(r"answer\s*[:：]\s*\(?([A-H])\b", re.IGNORECASE)
_LETTER = re.compile(r"\b([A-H])\b")
DOCUMENT_CHARS = 2000  # of the top document's text, as the context window of small VLMs allows


def read_letter(text: str, options: int) -> int | None:
    """The 0-based option the answer names: its ``Answer: X`` line, else its last standalone letter."""
    answer = strip_reasoning(text)
    found = _ANSWER_LINE.findall(answer) or _LETTER.findall(answer)
    for letter in reversed(found):
        index = LETTERS.index(letter.upper())
        if index < options:
            return index
    return None


def top_document(data: RaveneaData, run: Run, file_name: str) -> str | None:
    ranked = run.get(file_name)
    if not ranked:
        return None
    article = data.articles[int(ranked[0].doc_id)]
    return f"{article['title']}: {article['text'][:DOCUMENT_CHARS]}"


def cvqa_accuracy(model: LanguageModel, data: RaveneaData, run: Run | None) -> dict[str, Any]:
    prompt = load_prompt("ravenea/cvqa")
    rows = [row for row in data.instances if row["task_type"] == "cVQA" and row["options"] and row["answer"] is not None]
    requests = []
    for row in rows:
        document = top_document(data, run, row["file_name"]) if run is not None else None
        options = [f"{LETTERS[i]}) {option}" for i, option in enumerate(row["options"])]
        variables = {"question": row["question"], "options": options, "documents": [document] if document else None}
        requests.append(
            GenerationRequest.from_prompt(prompt, variables, images=[ImagePart.from_bytes(data.image(row["file_name"]))])
        )
    correct = unparsable = failed = 0
    for index, generation in model.generate_many(requests):
        if not generation.ok:
            failed += 1
            continue
        chosen = read_letter(generation.text, len(rows[index]["options"]))
        unparsable += chosen is None
        correct += chosen == rows[index]["answer"]
    answered = len(rows) - failed
    return {
        "items": len(rows),
        "answered": answered,
        "failed": failed,
        "unparsable": unparsable,
        "accuracy": correct / answered if answered else None,
        **prompt.provenance,
    }


def cic_scores(model: LanguageModel, data: RaveneaData, run: Run | None) -> dict[str, Any]:
    prompt = load_prompt("ravenea/cic")
    rows = [row for row in data.instances if row["task_type"] == "cIC"]
    requests = []
    for row in rows:
        document = top_document(data, run, row["file_name"]) if run is not None else None
        requests.append(
            GenerationRequest.from_prompt(
                prompt, {"documents": [document] if document else None}, images=[ImagePart.from_bytes(data.image(row["file_name"]))]
            )
        )
    captions: dict[str, str] = {}
    failed = 0
    for index, generation in model.generate_many(requests):
        text = strip_reasoning(generation.text) if generation.ok else ""
        if text:
            captions[rows[index]["file_name"]] = text
        else:
            failed += 1
    result: dict[str, Any] = {"items": len(rows), "captioned": len(captions), "failed": failed, **prompt.provenance}
    if not captions:
        return result
    countries = {row["file_name"]: row["country"] for row in rows if row["file_name"] in captions}
    result["region_score"] = region_score(captions, countries).as_dict()
    references = {
        row["file_name"]: list(row["human_captions"])
        for row in rows
        if row["file_name"] in captions and row["human_captions"]
    }
    if len(references) >= 2:  # CIDEr-D's idf needs more than one image
        scored = caption_scores({key: captions[key] for key in references}, references)
        result["caption_metrics"] = _caption_summary(scored.as_dict())
    return result


def _caption_summary(scores: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in scores.items() if key in ("ROUGE-L", "CIDEr-D", "mode", "items")}


def downstream(model: LanguageModel, data: RaveneaData, run: Run, tasks: Sequence[str]) -> dict[str, Any]:
    """Each task without retrieval and with the retriever's top document."""
    results: dict[str, Any] = {}
    for task in tasks:
        score = cvqa_accuracy if task == "cvqa" else cic_scores
        results[task] = {"without_retrieval": score(model, data, None), "with_top_document": score(model, data, run)}
    return results
