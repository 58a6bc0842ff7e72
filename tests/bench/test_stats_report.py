"""Pure parts of the benchmarks: latency percentiles and the targets table."""

from __future__ import annotations

import pytest

from uniret.bench.report import render_markdown, targets
from uniret.bench.stats import latency_summary
from uniret.config.serving import BenchTargets


def test_latency_summary_percentiles_and_qps():
    s = latency_summary([0.001 * i for i in range(1, 101)])  # 1..100 ms
    assert s["n"] == 100
    assert s["p50_ms"] == pytest.approx(50.5)
    assert s["p95_ms"] == pytest.approx(95.05)
    assert s["p99_ms"] == pytest.approx(99.01)
    assert s["qps"] == pytest.approx(100 / 5.05, rel=1e-3)  # sequential: count / total time
    assert latency_summary([0.01, 0.01], wall_seconds=0.01)["qps"] == 200.0  # concurrent: count / wall
    assert latency_summary([])["p50_ms"] is None


def test_targets_compare_measurements_with_bounds():
    result = {
        "modes": {"bm25": {"p50_vs_bm25": 1.0}, "uni": {"p50_vs_bm25": 1.3},
                  "hybrid_fast": {"p50_vs_bm25": 1.4, "p50_ms": 0.75}},
        "encoders": {"query_batch1": {"onnx_speedup_p50": 2.4}},
        "http": {"served_mode": "hybrid_fast",
                 "levels": {"1": {"p50_ms": 2.5, "p95_ms": 10.0, "qps": 90.0}, "16": {"p95_ms": 70.0, "qps": 650.0},
                            "64": {"p95_ms": 200.0, "qps": 700.0}},
                 "reference": {"mode": "bm25", "levels": {"16": {"qps": 1000.0}, "64": {"qps": 700.0}}}},
    }
    got = {t["target"].split(",")[0]: (t["measured"], t["met"]) for t in targets(result, BenchTargets())}
    assert got == {"uni p50 / bm25 p50 (query encoding included)": (1.3, False),
                   "hybrid_fast p50 / bm25 p50 (static query encoding included)": (1.4, True),
                   "ONNX query encoder speed-up over torch eager (batch 1": (2.4, True),
                   "serving p95 ms at 16 clients": (70.0, False),
                   "serving QPS at 16 clients": (650.0, True),  # serving targets at 16 clients, not the busiest level
                   "serving QPS / the same server's in bm25 mode at 16 clients": (0.65, False),
                   "HTTP p50 at 1 client - in-process p50": (1.75, False)}  # 2.5 - hybrid_fast's 0.75
    result["http"]["levels"]["1"]["p50_ms"] = 2.0
    result["http"]["reference"]["levels"]["16"]["qps"] = 800.0
    assert [t["met"] for t in targets(result, BenchTargets())][-2:] == [True, True]  # 0.8125 and 1.25 ms
    missing = targets({"modes": {}, "encoders": {}, "http": {"skipped": "x"}}, BenchTargets())
    assert [t["met"] for t in missing] == [None] * 7


def test_markdown_names_skipped_sections():
    result = {
        "machine": {"cpu_model": "cpu X", "cpu_cores": 2, "cpu_cores_usable": 2, "memory_gb": 1.0, "os": "Linux",
                    "python": "3.11"},
        "versions": {"uniret": "0"}, "bundle": {"path": "b", "version": "v", "docs": 3},
        "queries": {"dataset": "d", "split": "test", "count": 2}, "started_at": "t", "seconds": 1.0,
        "modes": {"skipped": "--skip"}, "encoders": {"skipped": "failed: boom"}, "sizes": {"skipped": "--skip"},
        "top_n": {"skipped": "--skip"}, "http": {"skipped": "--skip"},
    }
    result["targets"] = targets(result, BenchTargets())
    md = render_markdown(result)
    assert "skipped: failed: boom" in md and md.count("skipped: --skip") == 4 and "cpu X" in md


def test_bundle_path_is_shown_relative_to_the_project(tmp_path):
    # committed results must not carry the machine's absolute paths
    from uniret.utils.files import shown_path

    assert shown_path(tmp_path / "registry" / "bundles" / "v1", tmp_path) == "registry/bundles/v1"
    outside = tmp_path.parent / "elsewhere"
    assert shown_path(outside, tmp_path) == str(outside)
