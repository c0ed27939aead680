"""``m4build eval m4rag``: the M4-RAG paper's evaluation settings over published corpora and indexes."""
