"""Fusion math checked by hand: min-max interpolation and reciprocal rank fusion."""

from __future__ import annotations

import pytest

from uniret.config.loader import ConfigError, build
from uniret.config.retrieval import FusionConfig
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.fusion import FusionSearcher, interpolate, minmax, reciprocal_rank

LEX = {"q1": {"a": 10.0, "b": 6.0, "c": 2.0}}
DEN = {"q1": {"b": 0.9, "d": 0.5, "a": 0.1}}


def test_minmax_rescales_to_unit_interval_and_handles_ties():
    assert minmax({"a": 10.0, "b": 6.0, "c": 2.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert minmax({"x": 3.0, "y": 3.0}) == {"x": 1.0, "y": 1.0}
    assert minmax({}) == {}


def test_interpolation_by_hand():
    # lexical normalised: a 1, b 0.5, c 0 ; dense normalised: b 1, d 0.5, a 0
    fused = interpolate([LEX, DEN], [0.3, 0.7])["q1"]
    expected = {"a": 0.3 * 1 + 0.7 * 0, "b": 0.3 * 0.5 + 0.7 * 1, "c": 0.0, "d": 0.7 * 0.5}
    assert fused == pytest.approx(expected)
    assert list(fused) == ["b", "d", "a", "c"]  # best first


def test_rrf_by_hand():
    fused = reciprocal_rank([LEX, DEN], rrf_k=60)["q1"]
    expected = {
        "a": 1 / 61 + 1 / 63,
        "b": 1 / 62 + 1 / 61,
        "c": 1 / 63,
        "d": 1 / 62,
    }
    assert fused == pytest.approx(expected)
    assert list(fused) == ["b", "a", "d", "c"]


def test_fusion_keeps_queries_missing_from_one_run_and_cuts_at_k():
    fused = interpolate([LEX, {"q2": {"z": 1.0}}], [0.5, 0.5], k=2)
    assert set(fused) == {"q1", "q2"}
    assert list(fused["q1"]) == ["a", "b"]


class FixedRun(Searcher):
    """A searcher returning a fixed run: isolates the fusion arithmetic from any index."""

    def __init__(self, run, mode):
        self.run, self.mode = run, mode

    def search_batch(self, batch, k):
        return {q: dict(list(self.run.get(q, {}).items())[:k]) for q in batch.ids}


def test_fusion_searcher_matches_the_functions():
    batch = QueryBatch(ids=["q1"], texts=["unused"])
    parts = [FixedRun(LEX, "lexical"), FixedRun(DEN, "dense")]
    hybrid = FusionSearcher(parts, "hybrid", depth=10, alpha=0.3).search_batch(batch, 3)
    assert hybrid["q1"] == pytest.approx(interpolate([LEX, DEN], [0.3, 0.7], k=3)["q1"])
    assert list(hybrid["q1"]) == ["b", "d", "a"]
    rrf = FusionSearcher(parts, "rrf", depth=10, rrf_k=60).search_batch(batch, 4)
    assert rrf["q1"] == pytest.approx(reciprocal_rank([LEX, DEN], 60)["q1"])


def test_fusion_config_rejects_bad_values():
    with pytest.raises(ConfigError, match="alpha"):
        build(FusionConfig, {"alpha": 1.5}, "params: retrieval.fusion")
    with pytest.raises(ConfigError, match="cannot fuse"):
        build(FusionConfig, {"runs": ["lexical", "rrf"]}, "params: retrieval.fusion")


def test_fusion_searcher_uses_learned_weights_over_alpha():
    class Fixed(Searcher):
        encoder = None
        uses_jvm = False

        def __init__(self, run):
            self.run = run

        def search_batch(self, batch, k):
            return self.run

    batch = QueryBatch.from_dict({"q1": "x"})
    learned = FusionSearcher([Fixed(LEX), Fixed(DEN)], "hybrid", depth=10, alpha=0.5, weights=[0.3, 0.7])
    assert learned.search_batch(batch, 10) == interpolate([LEX, DEN], [0.3, 0.7], 10)
    default = FusionSearcher([Fixed(LEX), Fixed(DEN)], "hybrid", depth=10, alpha=0.5)
    assert default.weights == [0.5, 0.5]
    with pytest.raises(ValueError, match="weights"):
        FusionSearcher([Fixed(LEX), Fixed(DEN)], "hybrid", depth=10, weights=[1.0])


def test_each_run_is_taken_to_its_own_depth():
    batch = QueryBatch(ids=["q1"], texts=["unused"])
    parts = [FixedRun(LEX, "lexical"), FixedRun(DEN, "bm25")]
    # the second run cut at 2 docs (b, d): min-max over those two, a gets nothing from it
    fused = FusionSearcher(parts, "hybrid", depth=[3, 2], weights=[0.3, 0.7]).search_batch(batch, 2)
    assert fused == interpolate([LEX, {"q1": {"b": 0.9, "d": 0.5}}], [0.3, 0.7], 2)
    assert fused != interpolate([LEX, DEN], [0.3, 0.7], 2)
    # a deeper k keeps each run at its own depth: the top-2 is the prefix of the top-3
    deeper = FusionSearcher(parts, "hybrid", depth=[3, 2], weights=[0.3, 0.7]).search_batch(batch, 3)
    assert list(deeper["q1"])[:2] == list(fused["q1"])
    # no run reaches k: every run is taken to k
    shallow = FusionSearcher(parts, "hybrid", depth=[1, 1], weights=[0.3, 0.7]).search_batch(batch, 3)
    assert shallow == interpolate([LEX, DEN], [0.3, 0.7], 3)
    with pytest.raises(ValueError, match="depths"):
        FusionSearcher(parts, "hybrid", depth=[3])


def test_fusion_config_cuts_bm25_at_its_own_depth():
    cfg = build(FusionConfig, {"depth": 1000, "bm25_depth": 100}, "fusion")
    assert [cfg.depth_of(r) for r in ("dense", "lexical", "bm25")] == [1000, 1000, 100]
    with pytest.raises(ConfigError, match="bm25_depth"):
        build(FusionConfig, {"bm25_depth": 0}, "fusion")


def test_fixed_depths_head_the_list_and_a_deeper_k_continues_it():
    """hybrid_fast's cut fuses the head whatever k; asked deeper than every cut, the list goes on with
    the fusion of the runs taken to k, scored below the head (issue 58: recall at depth)."""
    lex = {"q1": {f"l{i}": 10.0 - i for i in range(6)}}
    den = {"q1": {f"d{i}": 1.0 - i / 10 for i in range(6)} | {"l5": 0.05}}
    batch = QueryBatch(ids=["q1"], texts=["unused"])
    parts = [FixedRun(lex, "lexical"), FixedRun(den, "dense")]
    fast = FusionSearcher(parts, "hybrid", depth=2, weights=[0.5, 0.5], fixed_depths=True)
    head = fast.search_batch(batch, 2)["q1"]
    assert head == interpolate([{"q1": {"l0": 10.0, "l1": 9.0}}, {"q1": {"d0": 1.0, "d1": 0.9}}], [0.5, 0.5], 2)["q1"]
    deep = fast.search_batch(batch, 10)["q1"]
    assert len(deep) == 10  # 12 documents exist; the cut alone has 4
    assert list(deep)[:4] == list(fast.search_batch(batch, 4)["q1"])  # the head is unchanged
    assert {d: deep[d] for d in list(deep)[:4]} == pytest.approx(fast.search_batch(batch, 4)["q1"])
    scores = list(deep.values())
    assert scores == sorted(scores, reverse=True) and scores[4] < scores[3]
    # the tail keeps the order of the fusion of whole runs
    whole = [d for d in interpolate([lex, den], [0.5, 0.5])["q1"] if d not in list(deep)[:4]]
    assert list(deep)[4:] == whole[:6]
    # without fixed depths nothing changes: every run taken to k, one fusion
    free = FusionSearcher(parts, "hybrid", depth=2, weights=[0.5, 0.5]).search_batch(batch, 10)
    assert free == interpolate([lex, den], [0.5, 0.5], 10)
