"""Gate decisions on hand-written metrics (pure logic, no files)."""

from __future__ import annotations

import copy

import pytest

from uniret.config.gate import GateConfig
from uniret.registry.gate import GateInputs, ProductionRef, bench_p95_ms, decide, decision_markdown


def _metrics(uni: dict[str, float], bm25: dict[str, float]) -> dict:
    """metrics.json in the evaluate stage's schema (macro = mean over datasets)."""
    datasets = {ds: {"uni": {"ndcg@10": uni[ds], "mrr@10": uni[ds]}, "bm25": {"ndcg@10": bm25[ds]}} for ds in uni}
    mean = lambda d: sum(d.values()) / len(d)  # noqa: E731
    return {
        "datasets": datasets,
        "macro": {"uni": {"ndcg@10": mean(uni)}, "bm25": {"ndcg@10": mean(bm25)}},
        "num_queries": {ds: 50 for ds in uni},
    }


CANDIDATE = _metrics({"scifact": 0.70, "nfcorpus": 0.33}, {"scifact": 0.66, "nfcorpus": 0.32})
PRODUCTION = _metrics({"scifact": 0.69, "nfcorpus": 0.34}, {"scifact": 0.66, "nfcorpus": 0.32})
INDEX = {"mean_active_terms_doc": 120.0, "bytes_per_doc_dense": 1536, "bytes_per_doc_sparse": 900}
BENCH = {"modes": {"uni": {"p50_ms": 4.0, "p95_ms": 20.0}, "bm25": {"p50_ms": 3.0, "p95_ms": 6.0}},
         "vs_production": {"p50_vs_production": 1.02, "p95_vs_production": 0.97}}


def _cfg(**kw) -> GateConfig:
    base = dict(candidate_system="uni", min_score=0.2, min_score_per_dataset={"scifact": 0.5}, max_regression=0.02,
                bm25_margin=0.0, min_active_terms_doc=1.0, max_active_terms_doc=1000.0, max_latency_p95_ms=100.0,
                max_latency_ratio_bm25=None, max_latency_p50_vs_production=None, max_latency_p95_vs_production=None,
                max_bytes_per_doc_dense=4096.0, max_bytes_per_doc_sparse=4096.0)
    return GateConfig(**{**base, **kw})


def _inputs(metrics=CANDIDATE, production=PRODUCTION, index=INDEX, bench=BENCH, absent=None) -> GateInputs:
    prod = None if production is None else ProductionRef("v1", production, "uni")
    return GateInputs(metrics=metrics, production=prod, index_metrics=index, bench=bench, absent=absent or {})


def _by(decision, name, dataset=None):
    found = [c for c in decision.checks if c.name == name and c.dataset == dataset]
    assert len(found) == 1, f"expected one {name}/{dataset} check, got {found}"
    return found[0]


def test_good_candidate_passes_every_check():
    decision = decide(_cfg(max_latency_ratio_bm25=1.5, max_latency_p50_vs_production=1.25,
                           max_latency_p95_vs_production=1.5), _inputs())
    assert decision.passed, decision.reasons()
    assert {c.status for c in decision.checks} == {"pass"}
    names = {c.name for c in decision.checks}
    assert {"min_score", "beats_baseline", "no_regression", "sparsity_min", "sparsity_max", "latency_p95_ms",
            "latency_p50_vs_production", "latency_p95_vs_production",
            "index_bytes_per_doc_dense", "index_bytes_per_doc_sparse"} <= names
    out = decision.to_dict()
    assert out["passed"] is True and out["production"] == "v1" and out["candidate"] == "uni"
    assert set(out["checks"][0]) == {"name", "dataset", "value", "threshold", "passed", "status", "reason",
                                     "interval", "rule"}


def test_regression_vs_production_is_blocked_naming_dataset_value_and_threshold():
    worse = copy.deepcopy(CANDIDATE)
    worse["datasets"]["nfcorpus"]["uni"]["ndcg@10"] = 0.30  # production 0.34, tolerance 0.02 -> 0.32
    decision = decide(_cfg(), _inputs(metrics=worse))
    assert not decision.passed
    check = _by(decision, "no_regression", "nfcorpus")
    assert check.status == "fail" and check.passed is False
    assert check.value == pytest.approx(0.30) and check.threshold == pytest.approx(0.32)
    assert "nfcorpus" in check.reason and "0.3000" in check.reason and "0.3200" in check.reason
    assert _by(decision, "no_regression", "scifact").status == "pass"
    assert [c.dataset for c in decision.failures] == ["nfcorpus"]
    assert "nfcorpus" in decision_markdown(decision).split("## Checks")[0]


def test_regression_within_tolerance_passes():
    slightly = copy.deepcopy(CANDIDATE)
    slightly["datasets"]["nfcorpus"]["uni"]["ndcg@10"] = 0.32  # exactly production - tolerance
    assert decide(_cfg(), _inputs(metrics=slightly)).passed


def test_below_bm25_on_macro_is_blocked():
    weak = _metrics({"scifact": 0.60, "nfcorpus": 0.30}, {"scifact": 0.66, "nfcorpus": 0.32})
    decision = decide(_cfg(max_regression=1.0), _inputs(metrics=weak))
    check = _by(decision, "beats_baseline")
    assert check.status == "fail"
    assert check.value == pytest.approx(0.45) and check.threshold == pytest.approx(0.49)
    assert not decision.passed


def test_bm25_margin_raises_the_bar():
    decision = decide(_cfg(bm25_margin=0.05), _inputs())  # candidate macro 0.515 < 0.49 + 0.05
    assert _by(decision, "beats_baseline").status == "fail"


def test_sparsity_collapse_is_blocked():
    collapsed = {**INDEX, "mean_active_terms_doc": 0.0}
    decision = decide(_cfg(), _inputs(index=collapsed))
    check = _by(decision, "sparsity_min")
    assert check.status == "fail" and check.value == 0.0 and check.threshold == 1.0
    assert not decision.passed


def test_dense_index_is_blocked_by_max_active_terms():
    decision = decide(_cfg(), _inputs(index={**INDEX, "mean_active_terms_doc": 30522.0}))
    assert _by(decision, "sparsity_max").status == "fail"


def test_cold_start_applies_absolute_and_bm25_rules_only():
    decision = decide(_cfg(), _inputs(production=None))
    assert decision.passed and decision.production is None
    check = _by(decision, "no_regression")
    assert check.status == "skipped" and check.passed is None and "cold start" in check.reason
    # the absolute floor still applies on cold start
    low = _metrics({"scifact": 0.45, "nfcorpus": 0.33}, {"scifact": 0.30, "nfcorpus": 0.32})
    blocked = decide(_cfg(), _inputs(metrics=low, production=None))
    check = _by(blocked, "min_score", "scifact")
    assert check.status == "fail" and check.threshold == 0.5 and "scifact" in check.reason


def test_missing_bench_output_blocks_a_budgeted_candidate_with_its_reason():
    reason = "bench stage results not found at /x/artifacts/bench/bench.json"
    decision = decide(_cfg(), _inputs(bench=None, absent={"bench": reason}))
    check = _by(decision, "latency_p95_ms")
    assert check.status == "fail" and check.reason == f"cannot be measured: {reason}"
    assert not decision.passed
    # index sizes still come from the bundle's own metrics
    assert _by(decision, "index_bytes_per_doc_dense").status == "pass"
    unbudgeted = decide(_cfg(max_latency_p95_ms=None), _inputs(bench=None, absent={"bench": reason}))
    assert _by(unbudgeted, "latency_p95_ms").status == "skipped" and unbudgeted.passed


@pytest.mark.parametrize(("bench", "expected"), [
    ({"modes": {"skipped": "failed: RuntimeError: boom"}}, "bench section 'modes' failed: RuntimeError: boom"),
    ({"modes": {"uni": {"skipped": "mode not offered by this bundle"}}}, "bench mode 'uni': mode not offered"),
    ({"modes": {"bm25": {"p95_ms": 6.0}, "dense": {"p95_ms": 9.0}}},
     "served mode 'uni' missing from the bench figures (modes: bm25, dense)"),
])
def test_unmeasurable_latency_blocks_with_the_reason(bench, expected):
    decision = decide(_cfg(), _inputs(bench=bench))
    check = _by(decision, "latency_p95_ms")
    assert check.status == "fail" and expected in check.reason, check.reason
    assert [c.name for c in decision.failures] == ["latency_p95_ms"]


def test_clear_candidate_is_budgeted_on_its_own_mode():
    metrics = copy.deepcopy(CANDIDATE)
    for systems in [*metrics["datasets"].values(), metrics["macro"]]:
        systems["clear"] = systems["uni"]
    slow = {"modes": {"uni": {"p95_ms": 5.0}, "clear": {"p95_ms": 900.0}}}
    decision = decide(_cfg(candidate_system="clear"), _inputs(metrics=metrics, production=None, bench=slow))
    check = _by(decision, "latency_p95_ms")
    assert check.status == "fail" and check.value == 900.0 and "'clear'" in check.reason


def test_unmeasurable_index_size_blocks():
    sizes_failed = {**BENCH, "sizes": {"skipped": "failed: OSError: gone"}}
    decision = decide(_cfg(), _inputs(index={"mean_active_terms_doc": 120.0}, bench=sizes_failed))
    check = _by(decision, "index_bytes_per_doc_dense")
    assert check.status == "fail" and "bench section 'sizes' failed: OSError: gone" in check.reason
    assert "index bundle metrics have no bytes_per_doc_dense" in check.reason
    # the bench stage's sizes answer when the bundle manifest does not
    measured = {**BENCH, "sizes": {"parts": {}}, "bytes_per_doc_dense": 1536.0, "bytes_per_doc_sparse": 800.0}
    assert decide(_cfg(), _inputs(index={"mean_active_terms_doc": 120.0}, bench=measured)).passed


def test_missing_index_manifest_skips_sparsity_with_reason():
    decision = decide(_cfg(), _inputs(index=None, absent={"index": "index bundle manifest not found at /b"}))
    assert _by(decision, "sparsity_min").reason == "index bundle manifest not found at /b"


def test_latency_over_budget_is_blocked_and_unbudgeted_is_skipped():
    slow = {"modes": {"uni": {"p95_ms": 250.0}}}
    assert _by(decide(_cfg(), _inputs(bench=slow)), "latency_p95_ms").status == "fail"
    unbudgeted = decide(_cfg(max_latency_p95_ms=None), _inputs(bench=slow))
    assert _by(unbudgeted, "latency_p95_ms").status == "skipped"
    assert "no budget" in _by(unbudgeted, "latency_p95_ms").reason


def test_index_size_over_budget_is_blocked():
    decision = decide(_cfg(max_bytes_per_doc_dense=1000.0), _inputs())
    check = _by(decision, "index_bytes_per_doc_dense")
    assert check.status == "fail" and check.value == 1536.0


def test_candidate_system_missing_from_metrics_fails():
    decision = decide(_cfg(candidate_system="unifier/hybrid"), _inputs(production=None))
    assert not decision.passed
    check = _by(decision, "min_score", "scifact")
    assert "unifier/hybrid" in check.reason and "bm25" in check.reason


def test_bench_p95_accepts_the_common_layouts():
    assert bench_p95_ms({"modes": {"uni": {"latency": {"p95_ms": 3.5}}}}, "uni") == 3.5
    assert bench_p95_ms({"uni": {"p95": 4}}, "uni") == 4.0
    assert bench_p95_ms({"modes": {"dense": {"p95_ms": 1}}}, "uni") is None


def test_gate_params_are_typed_and_checked(tmp_path):
    from uniret.config import ConfigError, load_params

    path = tmp_path / "params.yaml"
    path.write_text("gate: {min_active_terms_doc: 10, max_active_terms_doc: 5}\n")
    with pytest.raises(ConfigError, match="gate: min_active_terms_doc"):
        load_params(path, "cpu").section("gate")
    path.write_text("gate: {max_regression: 'a lot'}\n")
    with pytest.raises(ConfigError, match="gate.max_regression: expected a number"):
        load_params(path, "cpu").section("gate")


def test_candidate_system_defaults_to_the_serve_mode_of_the_active_recipe(tiny_ctx):
    import copy

    from uniret.config import Params
    from uniret.registry.gate import resolve_gate_config

    def with_values(recipe: str, candidate: str | None) -> Params:
        raw = copy.deepcopy(tiny_ctx.params.raw)
        raw["model"]["recipe"] = recipe
        raw["gate"]["candidate_system"] = candidate
        return Params(raw=raw, profile="tiny")

    assert resolve_gate_config(with_values("unifier", None)).candidate_system == "uni"
    assert resolve_gate_config(with_values("clear", None)).candidate_system == "clear"
    assert resolve_gate_config(with_values("led", None)).candidate_system == "dense"
    assert resolve_gate_config(with_values("clear", "clear/dense")).candidate_system == "clear/dense"  # explicit wins


def test_latency_ratio_to_bm25_blocks_a_slow_mode_and_names_both_figures():
    slow = {"modes": {"uni": {"p50_ms": 8.0, "p95_ms": 20.0}, "bm25": {"p50_ms": 3.0, "p95_ms": 6.0}}}
    check = _by(decide(_cfg(max_latency_ratio_bm25=1.5), _inputs(bench=slow)), "latency_p50_vs_bm25")
    assert check.status == "fail" and check.value == pytest.approx(8.0 / 3.0, abs=1e-3) and check.threshold == 1.5
    fast = {"modes": {"uni": {"p50_ms": 3.9, "p95_ms": 9.0}, "bm25": {"p50_ms": 3.0, "p95_ms": 6.0}}}
    assert _by(decide(_cfg(max_latency_ratio_bm25=1.5), _inputs(bench=fast)), "latency_p50_vs_bm25").status == "pass"
    # no BM25 figure in the same run: the ratio cannot be taken, and a budget that cannot be measured blocks
    alone = {"modes": {"uni": {"p50_ms": 3.9, "p95_ms": 9.0}}}
    check = _by(decide(_cfg(max_latency_ratio_bm25=1.5), _inputs(bench=alone)), "latency_p50_vs_bm25")
    assert check.status == "fail" and "bm25" in check.reason
    assert _by(decide(_cfg(max_latency_ratio_bm25=None), _inputs(bench=slow)), "latency_p50_vs_bm25").status == "skipped"
