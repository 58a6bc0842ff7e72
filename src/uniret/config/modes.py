"""The registry of retrieval modes: every module that names modes imports them from here."""

from __future__ import annotations

# Every mode a Searcher can be built for (uni_gated: models with a query gate); params.yaml
# `retrieval.modes` picks a subset.
# bm25_rm3: BM25 with RM3 query expansion (bm25.rm3); hybrid_bm25 may take it as its third signal
# dense_static / lexical_static: the bundle's dense and impact indexes searched with the static query
# tables (no transformer at query time; retrieval/static_query.py); hybrid_fast fuses them with BM25
MODES = ("bm25", "bm25_rm3", "dense", "lexical", "uni", "uni_gated", "hybrid", "hybrid_bm25", "rrf", "exhaustive",
         "clear", "dense_static", "lexical_static", "dense_feedback", "hybrid_fast")
# the default subset of retrieval.modes: every mode but uni_gated, which needs a gated model, and
# bm25_rm3, which needs a BM25 index with document vectors (a fusion builds it when it takes it)
DEFAULT_MODES = tuple(m for m in MODES if m not in ("uni_gated", "bm25_rm3"))
# modes a bundle is evaluated in (recipe eval_modes / serve_mode): all but BM25 alone (the bm25
# source scores it); bm25_rm3 is listed so that a recipe can show its fusion's BM25 signal alone
EVAL_MODES = ("bm25_rm3", "dense", "lexical", "uni", "hybrid", "hybrid_bm25", "rrf", "exhaustive", "clear",
              "dense_static", "lexical_static", "dense_feedback", "hybrid_fast")
# modes an in-memory model searcher answers directly (the rest need BM25 runs or learned weights)
MODEL_SEARCH_MODES = ("dense", "lexical", "uni", "hybrid", "rrf", "exhaustive")
# min-max fusions whose weights the index stage learns on the dev split (a bundle holds them)
FUSION_MODES = ("hybrid", "hybrid_bm25", "hybrid_fast")
# modes whose query side is the static tables: no ONNX query graph at query time
STATIC_MODES = ("dense_static", "lexical_static", "dense_feedback")
# modes that run no transformer on the query: a server offering only these never loads the ONNX query graph
QUERY_FREE_MODES = ("bm25", "bm25_rm3", "dense_static", "lexical_static", "dense_feedback", "hybrid_fast")
# what hybrid_fast may fuse (retrieval.fusion.fast_runs)
FAST_RUNS = ("bm25", "dense_static", "lexical_static", "dense_feedback")
# what hybrid_bm25 may add to the fused heads as its BM25 signal (retrieval.fusion.bm25_signal)
BM25_SIGNALS = ("bm25", "bm25_rm3")
