"""One interface over OpenAI, Gemini and OpenAI-compatible servers (vLLM, llama.cpp, Ollama).

>>> model = LanguageModel.open(ModelConfig("openai-compatible", "Qwen/Qwen2.5-VL-7B-Instruct",
...                                        base_url="http://localhost:8000/v1"),
...                            cache=ResponseCache(default_cache_path()))
>>> request = GenerationRequest.from_prompt(load_prompt("m4rag/caption"), {"question": "..."},
...                                         images=[ImagePart.from_path("dish.jpg")])
>>> model.generate(request).value
"""

from m4build.llm.cache import ResponseCache, default_cache_path
from m4build.llm.config import ModelConfig
from m4build.llm.costs import Budget, BudgetExceeded, Prices
from m4build.llm.messages import ImagePart, Message
from m4build.llm.model import Generation, GenerationRequest, LanguageModel, ModelError
from m4build.llm.prompts import PromptTemplate, load_prompt, parse_prompt
from m4build.llm.structured import OutputSchema

__all__ = [
    "Budget",
    "BudgetExceeded",
    "Generation",
    "GenerationRequest",
    "ImagePart",
    "LanguageModel",
    "Message",
    "ModelConfig",
    "ModelError",
    "OutputSchema",
    "Prices",
    "PromptTemplate",
    "ResponseCache",
    "default_cache_path",
    "load_prompt",
    "parse_prompt",
]
