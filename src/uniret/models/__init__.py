"""Retrieval models: backbones, the shared encoder interface, recipes' heads, the reranker."""
