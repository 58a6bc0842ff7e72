"""Profile the retrieval modes on synthetic pre-encoded vectors (no bundle, no encoder).

    python lab/profile_uni.py [docs] [mode ...]   # e.g. 5183 uni hybrid

Documents: `docs` SPLADE-like rows (41 terms drawn Zipf-like from a 30,522 vocabulary, gamma
weights) and unit 384-d dense vectors; 200 queries of 25 terms. Prints ms/query per mode (batch 1,
pre-encoded, k=10, uni K=1000, fusion depth 1000), then cProfile's top functions of each named mode.
Run it against another tree with PYTHONPATH=<tree>/src to compare before/after.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time

import numpy as np
import scipy.sparse as sp

from uniret.config.retrieval import DenseIndexConfig
from uniret.retrieval.base import QueryBatch
from uniret.retrieval.dense import DenseSearcher, build_faiss_index
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.fusion import FusionSearcher
from uniret.retrieval.lexical import LexicalSearcher, MemoryImpactIndex
from uniret.retrieval.uni import UniSearcher

VOCAB, DIM, TERMS_DOC, TERMS_QUERY, QUERIES, DEPTH = 30522, 384, 41, 25, 200, 1000


def sparse_rows(rng: np.random.Generator, n: int, terms: int) -> sp.csr_matrix:
    p = 1.0 / np.arange(1, VOCAB + 1)
    p /= p.sum()
    cols = [np.unique(rng.choice(VOCAB, size=terms, p=p)) for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])])
    data = rng.gamma(2.0, 0.5, size=int(indptr[-1])).astype(np.float32)
    return sp.csr_matrix((data, np.concatenate(cols), indptr), shape=(n, VOCAB))


def main(n: int, profiled: list[str]) -> None:
    rng = np.random.default_rng(0)
    docs = sparse_rows(rng, n, TERMS_DOC)
    dense = rng.standard_normal((n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    docids = [f"d{i}" for i in range(n)]
    lexical = MemoryImpactIndex(docids, docs, 100.0)
    queries = sparse_rows(rng, QUERIES, TERMS_QUERY)
    qdense = rng.standard_normal((QUERIES, DIM)).astype(np.float32)
    qdense /= np.linalg.norm(qdense, axis=1, keepdims=True)
    batches = []
    for i in range(QUERIES):
        b = QueryBatch([f"q{i}"], [""])
        b.encoded = EncodedTexts(dense=qdense[i:i + 1], sparse=queries[i:i + 1])
        batches.append(b)
    searchers = {"lexical": LexicalSearcher(lexical),
                 "dense": DenseSearcher(build_faiss_index(dense, DenseIndexConfig(type="flat")), docids),
                 "uni": UniSearcher(lexical, dense, DEPTH)}
    searchers["hybrid"] = FusionSearcher([searchers["lexical"], searchers["dense"]], "hybrid", DEPTH)
    for mode, searcher in searchers.items():
        for b in batches[:5]:
            searcher.search_batch(b, 10)
        start = time.perf_counter()
        for b in batches:
            searcher.search_batch(b, 10)
        print(f"{mode}: {(time.perf_counter() - start) / QUERIES * 1000:.3f} ms/query")
    for mode in profiled:
        prof = cProfile.Profile()
        prof.enable()
        for b in batches:
            searchers[mode].search_batch(b, 10)
        prof.disable()
        print(f"== {mode}")
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5183, sys.argv[2:])
