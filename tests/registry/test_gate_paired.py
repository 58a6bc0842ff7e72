"""The gate's paired rule on constructed per-query score tables: it blocks a candidate that is worse
with confidence by more than a margin, and nothing that is only noise."""

from __future__ import annotations

import numpy as np
import pytest

from uniret.config.gate import GateConfig
from uniret.evaluation.noninferiority import detectable_loss, noninferiority
from uniret.registry.gate import GateInputs, ProductionRef, decide, decision_markdown

SIZES = {"scifact": 300, "nfcorpus": 323, "cranfield": 225, "medline": 30, "npl": 93}


def _production(seed: int = 1) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    return {ds: {f"q{i}": float(v) for i, v in enumerate(rng.uniform(0.0, 1.0, n))} for ds, n in SIZES.items()}


def _candidate(prod, noise: float, shift: dict[str, float] | None = None, seed: int = 2):
    """Production's scores plus zero-mean per-query noise (an equal retrain), minus `shift` per set."""
    rng = np.random.default_rng(seed)
    out = {}
    for ds, rows in prod.items():
        jitter = rng.normal(0.0, noise, len(rows))
        jitter -= jitter.mean()  # an equal candidate: the same mean on every set
        out[ds] = {q: v + e - (shift or {}).get(ds, 0.0) for (q, v), e in zip(rows.items(), jitter, strict=True)}
    return out


def _metrics(queries) -> dict:
    return {"datasets": {ds: {"uni": {"ndcg@10": float(np.mean(list(rows.values())))}} for ds, rows in queries.items()}}


def _decide(cand, prod, **cfg):
    config = GateConfig(candidate_system="uni", min_score=0.0, min_score_per_dataset={}, bm25_margin=-1.0,
                        min_active_terms_doc=None, max_active_terms_doc=None, max_latency_p95_ms=None,
                        max_latency_ratio_bm25=None, max_latency_p50_vs_production=None,
                        max_latency_p95_vs_production=None, max_bytes_per_doc_dense=None, max_bytes_per_doc_sparse=None,
                        regression_resamples=2000, **cfg)
    metrics = _metrics(cand)
    metrics["macro"] = {"uni": {"ndcg@10": 0.5}, "bm25": {"ndcg@10": 0.4}}
    production = ProductionRef("v1", _metrics(prod), "uni", kind="rescored", queries=prod)
    return decide(config, GateInputs(metrics=metrics, production=production, candidate_queries=cand,
                                     train_dataset="scifact"))


def _regression(decision):
    return {(c.name, c.dataset): c for c in decision.checks if c.name.startswith("no_regression")}


def test_an_equal_candidate_with_noisy_sets_passes_where_the_point_rule_blocks():
    prod = _production()
    # per-query noise of 0.25 and a chance shift of the small set's mean: medline's 30 queries drop 0.03
    cand = _candidate(prod, noise=0.25, shift={"medline": 0.03})
    decision = _decide(cand, prod)
    assert decision.passed, decision.reasons()
    checks = _regression(decision)
    assert {k for k in checks} == {("no_regression", d) for d in SIZES} | {("no_regression_pooled", None)}
    medline = checks[("no_regression", "medline")]
    assert medline.rule == "paired" and medline.value == pytest.approx(-0.03, abs=1e-9)
    assert medline.interval[0] < -0.03 < medline.interval[1] and medline.interval[1] > -0.005
    # the old rule, on the same scores, blocks the same candidate on medline alone
    old = _decide(cand, prod, regression_rule="threshold")
    assert [(c.name, c.dataset) for c in old.failures] == [("no_regression", "medline")]


def test_a_candidate_worse_by_a_clear_margin_on_one_set_is_blocked_naming_its_interval():
    prod = _production()
    cand = _candidate(prod, noise=0.05, shift={"scifact": 0.03})
    decision = _decide(cand, prod)
    assert not decision.passed
    [failed] = decision.failures
    assert (failed.name, failed.dataset, failed.rule) == ("no_regression", "scifact", "paired")
    assert failed.interval[1] < -0.005 and failed.threshold == pytest.approx(-0.005)
    text = decision_markdown(decision)
    assert "scifact: ndcg@10: candidate - production v1 -0.0300 [" in text and "margin 0.005" in text
    assert "| no_regression | scifact | paired | -0.03 | [" in text


def test_a_small_set_alone_cannot_block_on_a_difference_inside_its_noise():
    prod = _production()
    # medline (30 queries) drops 0.04 with per-query noise 0.25: its interval is about +-0.075
    decision = _decide(_candidate(prod, noise=0.25, shift={"medline": 0.04}), prod)
    medline = _regression(decision)[("no_regression", "medline")]
    assert medline.status == "pass" and medline.interval[1] > 0
    # the same 0.04 with little noise is a loss the set can show, and it blocks
    blocked = _decide(_candidate(prod, noise=0.01, shift={"medline": 0.04}), prod)
    assert ("no_regression", "medline") in [(c.name, c.dataset) for c in blocked.failures]


def test_losses_too_small_for_each_set_add_up_in_the_pooled_rule():
    prod = _production()
    shift = {d: 0.012 for d in SIZES if d != "scifact"}
    decision = _decide(_candidate(prod, noise=0.05, shift=shift), prod, regression_margins={"nfcorpus": 0.02,
                       "cranfield": 0.02, "medline": 0.05, "npl": 0.03})
    checks = _regression(decision)
    assert all(checks[("no_regression", d)].status == "pass" for d in SIZES)
    pooled = checks[("no_regression_pooled", None)]
    assert pooled.status == "fail" and pooled.rule == "pooled" and pooled.value == pytest.approx(-0.012, abs=1e-9)
    assert "zero-shot-macro ndcg@10 over cranfield, medline, nfcorpus, npl" in pooled.reason


def test_missing_per_query_scores_fall_back_to_the_point_rule_with_the_reason():
    prod = _production()
    cand = _candidate(prod, noise=0.05)
    config = GateConfig(candidate_system="uni", min_score=0.0, min_score_per_dataset={}, bm25_margin=-1.0,
                        max_latency_p95_ms=None, max_latency_ratio_bm25=None, max_latency_p50_vs_production=None,
                        max_latency_p95_vs_production=None, max_bytes_per_doc_dense=None,
                        max_bytes_per_doc_sparse=None, min_active_terms_doc=None, max_active_terms_doc=None)
    production = ProductionRef("v1", _metrics(prod), "uni", kind="stored", queries=None,
                               no_queries="production v1's per-query scores unreadable: gone")
    decision = decide(config, GateInputs(metrics=_metrics(cand), production=production, candidate_queries=cand))
    checks = _regression(decision)
    assert ("no_regression_pooled", None) not in checks  # as before per-query scores: one point check per set
    assert {c.rule for c in checks.values()} == {"threshold"}
    assert checks[("no_regression", "scifact")].reason.endswith("point rule: production v1's per-query scores unreadable: gone")


def test_noninferiority_is_seeded_and_refuses_bad_settings():
    a, b = [0.1, 0.5, 0.9, 0.3], [0.2, 0.4, 0.8, 0.3]
    first = noninferiority({"s": (a, b)}, margin=0.01)
    assert first == noninferiority({"s": (a, b)}, margin=0.01)
    assert first.diff == pytest.approx(-0.025) and first.queries == 4
    with pytest.raises(ValueError, match="margin"):
        noninferiority({"s": (a, b)}, margin=-0.1)
    with pytest.raises(ValueError, match="confidence"):
        noninferiority({"s": (a, b)}, margin=0.0, confidence=0.4)


def test_detectable_loss_matches_the_normal_approximation_and_the_rule():
    rng = np.random.default_rng(5)
    diffs = rng.normal(0.0, 0.1, 300)  # se = 0.1 / sqrt(300) = 0.00577
    found = detectable_loss({"s": diffs}, margin=0.005)
    se = 0.1 / np.sqrt(300)
    assert found == pytest.approx(0.005 + 2 * 1.645 * se, abs=0.003)
    # the rule itself, on fresh samples shifted by that loss, blocks about 95% of them
    blocked = 0
    for i in range(200):
        sample = np.random.default_rng(100 + i).normal(0.0, 0.1, 300) - found
        blocked += noninferiority({"s": (np.zeros(300), sample)}, margin=0.005, resamples=1000).worse
    assert 0.88 <= blocked / 200 <= 0.99
