"""Lucene impact index round trip: integer dot products, WordPiece tokens, top-N sparsification."""

from __future__ import annotations

import random

import pytest

from uniret.lexical.impact import ImpactSearcher, build_impact_index, quantize, search_impact

QUANT = 100.0
VOCAB = ["##ing", "##s", ",", ".", "[SEP]", "run", "café", "e-mail", "(", "don't", "##ed", "x"]


def _dot(q: dict[str, float], d: dict[str, float], top_n: int | None = None) -> int:
    """Expected score, computed independently of the module: round(100*w) products."""
    if top_n is not None:
        d = dict(sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n])
    return sum(round(QUANT * w) * round(QUANT * d[t]) for t, w in q.items() if t in d and w > 0 and d[t] > 0)


def _random_vectors(rng: random.Random, n: int, prefix: str) -> dict[str, dict[str, float]]:
    return {
        f"{prefix}{i}": {t: round(rng.uniform(0.05, 3.0), 3) for t in rng.sample(VOCAB, rng.randint(1, 6))}
        for i in range(n)
    }


@pytest.fixture(scope="module")
def corpus():
    rng = random.Random(5)
    return _random_vectors(rng, 40, "d"), _random_vectors(rng, 12, "q")


def test_scores_equal_integer_dot_products(tmp_path, corpus):
    docs, queries = corpus
    stats = build_impact_index(docs.items(), tmp_path / "impact", QUANT, threads=1, total=len(docs))
    assert stats.docs == len(docs) and stats.skipped == 0
    run = search_impact(tmp_path / "impact", queries, k=len(docs), quant=QUANT, threads=1)
    for qid, q in queries.items():
        expected = {did: _dot(q, d) for did, d in docs.items()}
        expected = {did: s for did, s in expected.items() if s > 0}
        assert run[qid] == pytest.approx(expected, abs=0), qid


def test_wordpiece_and_punctuation_tokens_survive_verbatim(tmp_path):
    docs = [("a", {"##ing": 1.0}), ("b", {",": 0.5, "[SEP]": 0.25}), ("c", {"ing": 2.0, "café": 0.1})]
    build_impact_index(docs, tmp_path / "idx", QUANT, threads=1)
    with ImpactSearcher(tmp_path / "idx", QUANT, threads=1) as searcher:
        run = searcher.search(
            {"wp": {"##ing": 1.0}, "bare": {"ing": 1.0}, "punct": {",": 1.0}, "sep": {"[SEP]": 2.0},
             "accent": {"café": 1.0}, "lower": {"[sep]": 1.0}},
            k=10, progress=False,
        )
    assert run["wp"] == {"a": 100 * 100}  # not split, not matched against "ing"
    assert run["bare"] == {"c": 100 * 200}
    assert run["punct"] == {"b": 100 * 50}
    assert run["sep"] == {"b": 200 * 25}
    assert run["accent"] == {"c": 100 * 10}
    assert run["lower"] == {}  # no case folding either


def test_top_n_sparsification_keeps_the_largest_weights(tmp_path):
    doc = {"a": 0.9, "b": 0.1, "c": 2.5, "d": 0.5, "e": 1.7}
    build_impact_index([("doc", doc)], tmp_path / "idx", QUANT, top_n=2, threads=1)
    run = search_impact(tmp_path / "idx", {t: {t: 1.0} for t in doc}, k=5, quant=QUANT, threads=1)
    assert {t for t, hits in run.items() if hits} == {"c", "e"}
    assert run["c"] == {"doc": 100 * 250}


def test_quantize_rules():
    assert quantize({"a": 0.004, "b": -1.0, "c": 0.0, "d": 1.234}, QUANT) == {"d": 123}  # 0.4 rounds to 0
    assert quantize({"a": 1.0, "b": 1.0, "c": 2.0}, QUANT, top_n=2) == {"c": 200, "a": 100}  # tie -> token
    with pytest.raises(ValueError, match="whitespace"):
        quantize({"two words": 1.0}, QUANT, what="document 'x'")
    with pytest.raises(ValueError, match="document 'x'.*nan"):
        quantize({"a": float("nan")}, QUANT, what="document 'x'")


def test_empty_documents_are_skipped_and_bad_params_rejected(tmp_path):
    stats = build_impact_index([("a", {"x": 1.0}), ("z", {"x": 0.001})], tmp_path / "idx", QUANT, threads=1)
    assert (stats.docs, stats.skipped) == (1, 1)
    assert search_impact(tmp_path / "idx", {"q": {"x": 1.0}, "empty": {}}, 5, QUANT, threads=1) == {
        "q": {"a": 10000.0},
        "empty": {},
    }
    with pytest.raises(ValueError, match="quant"):
        build_impact_index([], tmp_path / "bad", 0)
