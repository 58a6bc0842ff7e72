"""The gate holds the served mode's p50 and p95 to production's times a margin, from the bench
stage's side-by-side timing; a cold start skips the rule, a timing that failed or is missing blocks."""

from __future__ import annotations

from uniret.config.gate import GateConfig
from uniret.registry.gate import production_latency_checks

CFG = GateConfig(max_latency_p50_vs_production=1.25, max_latency_p95_vs_production=1.5)


def _by_name(checks):
    return {c.name: c for c in checks}


def test_within_and_beyond_the_margin():
    ok = _by_name(production_latency_checks(CFG, {"vs_production": {"p50_vs_production": 1.1, "p95_vs_production": 1.4}},
                                            "hybrid_fast", None, "v1"))
    assert [c.status for c in ok.values()] == ["pass", "pass"]
    slow = _by_name(production_latency_checks(CFG, {"vs_production": {"p50_vs_production": 2.0, "p95_vs_production": 1.2}},
                                              "hybrid_fast", None, "v1"))
    assert slow["latency_p50_vs_production"].status == "fail" and slow["latency_p95_vs_production"].status == "pass"
    assert "2 > maximum 1.25" in slow["latency_p50_vs_production"].reason


def test_a_cold_start_skips_and_an_unmeasured_ratio_blocks():
    cold = production_latency_checks(CFG, {"modes": {}}, "m", None, None)
    assert [c.status for c in cold] == ["skipped", "skipped"] and "cold start" in cold[0].reason
    failed = production_latency_checks(CFG, {"vs_production": {"failed": "production v1 not timed: IntegrityError"}}, "m",
                                       None, "v1")
    assert [c.status for c in failed] == ["fail", "fail"] and "IntegrityError" in failed[0].reason
    missing = production_latency_checks(CFG, {"modes": {}}, "m", None, "v1")
    assert [c.status for c in missing] == ["fail", "fail"] and "production_rounds" in missing[0].reason
    absent = production_latency_checks(CFG, None, "m", "artifacts/bench missing", "v1")
    assert [c.status for c in absent] == ["fail", "fail"] and "artifacts/bench missing" in absent[0].reason


def test_off_when_no_margin_is_configured():
    off = GateConfig(max_latency_p50_vs_production=None, max_latency_p95_vs_production=None)
    assert [c.status for c in production_latency_checks(off, None, "m", None, "v1")] == ["skipped", "skipped"]
