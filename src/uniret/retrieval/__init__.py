"""Retrieval: dense, sparse, uni-retrieval, fusion and gating behind one interface; run files."""
