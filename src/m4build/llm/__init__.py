"""One interface over OpenAI, Gemini and OpenAI-compatible servers."""
