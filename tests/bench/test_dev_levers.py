"""benchmarks/dev_levers.py: the fusion normalisations it compares, on hand-made scores."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest


@pytest.fixture(scope="module")
def levers(repo_root):
    spec = importlib.util.spec_from_file_location("dev_levers", repo_root / "benchmarks" / "dev_levers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


FLOOR = {"lexical": 0.0, "bm25": 0.0, "dense": -20.0}


def test_minmax_spans_the_query_and_misses_get_zero(levers):
    values, missing = levers.normalise("minmax", "bm25", np.array([9.0, 5.0, 1.0]), FLOOR)
    assert values.tolist() == [1.0, 0.5, 0.0] and missing == 0.0


def test_theoretical_minmax_measures_from_the_floor(levers):
    # dense = 20 x cosine: 10 and 5 over the floor -20 are 1 and 25/30, not min-max's 1 and 0
    values, missing = levers.normalise("theoretical_minmax", "dense", np.array([10.0, 5.0]), FLOOR)
    assert values == pytest.approx([1.0, 25 / 30]) and missing == 0.0


def test_zscore_gives_a_missing_doc_the_lowest_retrieved_value(levers):
    values, missing = levers.normalise("zscore", "lexical", np.array([3.0, 2.0, 1.0]), FLOOR)
    assert values.mean() == pytest.approx(0.0) and values.std() == pytest.approx(1.0)
    assert missing == pytest.approx(values.min())


def test_rrf_reads_ranks_only(levers):
    a, _ = levers.normalise("rrf", "bm25", np.array([100.0, 1.0]), FLOOR)
    b, _ = levers.normalise("rrf", "bm25", np.array([2.0, 1.9]), FLOOR)
    assert a.tolist() == b.tolist() == [1 / (levers.RRF_K + 1), 1 / (levers.RRF_K + 2)]


def test_fused_ndcg_ranks_by_the_weighted_sum(levers):
    ds = levers.DevSet("toy/dev", {"q": {"d2": 1}}, {"q": "x"}, ["d1", "d2"], np.zeros((2, 2)),
                       {"lexical": {"q": {"d1": 2.0, "d2": 1.0}}, "dense": {"q": {"d1": 1.0, "d2": 3.0}},
                        "bm25": {"q": {"d1": 5.0, "d2": 4.0}}})
    matrices = levers._matrices("minmax", ds, FLOOR)
    assert levers._fused_ndcg(matrices, ds.qrels, (0.0, 1.0, 0.0)) == pytest.approx(1.0)  # dense puts d2 first
    assert levers._fused_ndcg(matrices, ds.qrels, (0.5, 0.0, 0.5)) < 1.0  # lexical and BM25 put d1 first


def test_wise_checkpoint_interpolates_trained_and_pretrained_weights(levers, tmp_path):
    import torch

    from uniret.config.models import ModelConfig
    from uniret.models.factory import build_model, load_model, save_model

    start = build_model(ModelConfig(arch="splade", backbone="splade-tiny"))
    pretrained = {k: v.clone() for k, v in start.state_dict().items()}
    with torch.no_grad():  # stands for training: every weight moves by +1
        for p in start.parameters():
            p.add_(1.0)
    save_model(start, tmp_path / "trained")
    trained_names = dict(start.named_parameters())  # the weights that moved (buffers did not)
    for alpha in (0.0, 0.25, 1.0):
        levers.wise_checkpoint(tmp_path / "trained", alpha, tmp_path / f"a{alpha}")
        mixed, _ = load_model(tmp_path / f"a{alpha}")
        for name, value in mixed.state_dict().items():
            if value.is_floating_point() and name in trained_names:
                assert torch.allclose(value, pretrained[name] + alpha, atol=1e-6), (alpha, name)
    with pytest.raises(SystemExit, match="alpha must be in"):
        levers.wise_checkpoint(tmp_path / "trained", 1.5, tmp_path / "bad")
