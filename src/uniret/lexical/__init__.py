"""Lucene through pyserini: JVM setup, BM25 indexes and search, impact (learned-sparse) indexes."""
