"""m4build: build multilingual and multimodal RAG benchmarks and publish them to the Hugging Face Hub."""

__version__ = "0.1.0"
