"""What a model said, without the thinking it showed and the Markdown it wrapped it in.

Reasoning models (DeepSeek-R1, Qwen3, QwQ, served through vLLM or llama.cpp) put their chain of
thought in ``<think>…</think>`` before the answer, and many chat models wrap JSON in a Markdown
code fence. A parser that reads the first integer or the first ``{`` of the raw text then scores
the thinking instead of the answer, which is how the papers' own answer parsing breaks on these
models. Every consumer of model text (structured output in ``m4build.llm``, answer parsing in
``m4build.metrics``) reads the final answer through these functions.
"""

from __future__ import annotations

import re

_THINK_TAGS = ("think", "thinking", "reasoning")
_CLOSED_BLOCK = re.compile(
    r"<(?P<tag>" + "|".join(_THINK_TAGS) + r")\b[^>]*>.*?</(?P=tag)\s*>", re.DOTALL | re.IGNORECASE
)
# Some chat templates open the block in the prompt, so the output holds only the closing tag.
_DANGLING_CLOSE = re.compile(r"^.*?</(?:" + "|".join(_THINK_TAGS) + r")\s*>", re.DOTALL | re.IGNORECASE)
_UNCLOSED_OPEN = re.compile(r"<(?:" + "|".join(_THINK_TAGS) + r")\b[^>]*>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[ \t]*\n?(?P<body>.*?)```", re.DOTALL)


def strip_reasoning(text: str) -> str:
    """The text after any reasoning block, trimmed.

    A model cut off mid-thought (an opening tag and no closing one) has given no answer, so the
    result is empty rather than the half-finished thinking.
    """
    answer = _CLOSED_BLOCK.sub("", text)
    answer = _DANGLING_CLOSE.sub("", answer, count=1)
    opened = _UNCLOSED_OPEN.search(answer)
    if opened:
        answer = answer[: opened.start()]
    return answer.strip()


def unfence(text: str) -> str:
    """The body of the last Markdown code fence, preferring one marked ``json``; else the text.

    The last fence is taken because models that explain before answering put the answer last.
    """
    fences = list(_FENCE.finditer(text))
    if not fences:
        return text.strip()
    marked = [fence for fence in fences if fence.group("lang").lower() == "json"]
    return (marked or fences)[-1].group("body").strip()


def final_answer(text: str) -> str:
    """The answer a model gave: reasoning removed, then any code fence opened."""
    return unfence(strip_reasoning(text))
