"""CompositeLoss: weights, schedules, per-term logs; building every recipe's objective from params.yaml."""

from __future__ import annotations

import math

import pytest

from uniret.config.models import LossTermConfig, ScheduleConfig
from uniret.config.params import load_params
from uniret.losses.compose import CompositeLoss, build_composite, needs
from uniret.losses.contrastive import ContrastiveLoss
from uniret.losses.flops import FlopsLoss
from uniret.losses.schedules import LinearRamp, QuadraticRamp, build_schedule


def test_schedules_by_hand():
    quad = QuadraticRamp(10)
    assert [quad(s) for s in (1, 5, 10, 20)] == pytest.approx([0.01, 0.25, 1.0, 1.0])
    lin = LinearRamp(4)
    assert [lin(s) for s in (1, 2, 4, 8)] == pytest.approx([0.25, 0.5, 1.0, 1.0])
    assert build_schedule(ScheduleConfig(kind="constant"))(1) == 1.0
    assert build_schedule(ScheduleConfig(kind="quadratic", ramp_steps=0))(1) == 1.0


def test_composite_weighted_sum_with_schedule(two_query_batch):
    make = two_query_batch
    contrastive = (math.log(1 + math.exp(-1)) + math.log(1 + math.exp(2))) / 2  # see test_loss_values
    flops_value = 5.0 + 1.8125  # query + document FLOPS of the same batch (weights 1, 1)
    loss = CompositeLoss({
        "contrastive": (ContrastiveLoss("dense", 1.0, in_batch=False), 1.0),
        "flops": (FlopsLoss(1.0, 1.0), (0.1, QuadraticRamp(10))),
    })
    batch = make(step=5)  # ramp (5/10)^2 = 0.25 -> flops weight 0.025
    total, logs = loss(batch)
    assert total.item() == pytest.approx(contrastive + 0.025 * flops_value, rel=1e-6)
    assert logs["contrastive"] == pytest.approx(contrastive, rel=1e-6)
    assert logs["flops"] == pytest.approx(flops_value)
    assert logs["flops/weight"] == pytest.approx(0.025)
    assert logs["total"] == pytest.approx(total.item())
    total.backward()
    assert batch.query.sparse.grad is not None  # the flops term took part


def test_zero_weight_term_is_skipped(two_query_batch):
    make = two_query_batch
    loss = CompositeLoss({
        "contrastive": (ContrastiveLoss("dense", 1.0, False), 1.0),
        "uni": (ContrastiveLoss("nonexistent-channel"), 0.0),  # would raise if evaluated
    })
    total, logs = loss(make())
    assert "uni" not in logs and logs["uni/weight"] == 0.0
    assert total.item() == pytest.approx(logs["contrastive"])


@pytest.mark.parametrize("profile", ["tiny", "cpu", "gpu"])
def test_every_recipe_stage_builds_from_params(repo_root, profile):
    section = load_params(repo_root / "params.yaml", profile).section("losses")
    for recipe, stages in section.recipes.items():
        for stage, terms in stages.items():
            composite = build_composite(terms)
            assert set(composite.losses) == set(terms), (recipe, stage)
    unifier = section.terms("unifier", "continual")
    assert {"contrastive_dense", "contrastive_lex", "agreement", "flops"} <= set(unifier)
    assert needs(section.terms("led", "continual")) == {"lexical"}
    assert needs(section.terms("led", "distill")) == {"lexical", "reranker"}
    assert needs(section.terms("clear", "warmup")) == {"bm25"}
    residual = LossTermConfig(loss="contrastive", bm25_residual=3.0)
    assert needs({"c": residual}) == {"bm25"} and needs({"c": LossTermConfig(loss="contrastive")}) == set()
    assert build_composite({"c": residual}).losses["c"].bm25_residual == 3.0
    agg = build_composite(section.terms("aggretriever", "warmup"))
    assert [agg.weight_at(n, 1) for n in ("contrastive", "contrastive_agg", "contrastive_cls")] == [1.0, 0.5, 0.5]


def test_negative_bm25_residual_is_refused():
    with pytest.raises(ValueError, match="bm25_residual must be >= 0"):
        LossTermConfig(loss="contrastive", bm25_residual=-1.0).validate()
