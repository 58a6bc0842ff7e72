"""The BM25 route's query analysis in one JNI call (uniret.QueryTerms, E103) gives the terms
Anserini's AnalyzerUtils gives, with their counts, for every query of the collections."""

from __future__ import annotations

import collections

import pytest

from uniret.config import load_params
from uniret.data.beir import BeirDataset
from uniret.lexical.bm25_arrays import query_analyzer
from uniret.lexical.bm25_weights import query_counts
from uniret.lexical.jvm import JVM_LOCK, helpers_loaded, java_class

EDGES = ["", "   ", "the and of", "naïve café résumé", "line\nbreak\ttab", "C++ & α-synuclein 5'-UTR",
         "IL-6 IL-6 il-6 interleukin", "x" * 300]


def test_one_call_gives_anserinis_terms_and_counts(repo_root, shared_data):
    with JVM_LOCK:
        if not helpers_loaded():
            pytest.skip("uniret's Java helpers are not on the classpath (no javac on PATH)")
        analyzer = query_analyzer(load_params(repo_root / "params.yaml", "tiny").section("bm25"))
        anserini = java_class("io.anserini.analysis.AnalyzerUtils")
        texts = EDGES + [text for name in ("scifact", "nfcorpus")
                         for text in BeirDataset(shared_data / name, name).queries().values()]
        for text in texts:
            want = collections.Counter(str(t) for t in anserini.analyze(analyzer, text).toArray())
            assert query_counts(analyzer, text) == want, text
        assert query_counts(analyzer, "IL-6 IL-6 il-6 interleukin")["il"] == 3  # counts, not a set
