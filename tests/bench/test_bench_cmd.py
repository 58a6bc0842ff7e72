"""`uniret bench` on the tiny real bundle: one run writes bench.json and bench.md with every
section measured (values are measurements; no speed target is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uniret.bench.runner import SECTIONS
from uniret.cli import main
from uniret.config import load_params


@pytest.fixture(scope="module")
def bench_out(tiny_bundle, shared_data, repo_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    code = main(["bench", "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--data", str(shared_data),
                 "--bundle", str(tiny_bundle), "--out", str(out)])
    assert code == 0
    return json.loads((out / "bench.json").read_text()), (out / "bench.md").read_text(), out


@pytest.mark.slow
def test_every_section_is_measured(bench_out):
    result = bench_out[0]
    for name in SECTIONS:
        assert "skipped" not in result[name], (name, result[name].get("skipped"))
    assert result["machine"]["cpu_cores"] >= 1 and result["machine"]["cpu_model"]
    assert {"torch", "onnxruntime", "faiss-cpu", "pyserini"} <= set(result["versions"])
    assert result["queries"] == {"dataset": "scifact", "split": "test", "count": 12}
    assert set(result["section_seconds"]) == set(SECTIONS)


@pytest.mark.slow
def test_modes_section_has_latency_and_ndcg_for_every_mode(bench_out, repo_root):
    modes = bench_out[0]["modes"]
    assert set(modes) == set(load_params(repo_root / "params.yaml", "tiny").section("bench").modes)
    assert "hybrid_bm25" in modes  # the default recipe's served mode
    for row in modes.values():
        assert row["n"] == 12
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"]
        assert row["qps"] > 0 and 0.0 <= row["ndcg@10"] <= 1.0
    assert modes["bm25"]["p50_vs_bm25"] == 1.0
    # BM25 searched bench.jvm_warmup_queries times before the first timed mode, so every mode calling
    # Lucene is timed against compiled code (E100)
    cfg = load_params(repo_root / "params.yaml", "tiny").section("bench")
    warm = bench_out[0]["config"]["jvm_warmup"]
    assert warm["queries"] == cfg.jvm_warmup_queries > 0 and warm["seconds"] >= 0


@pytest.mark.slow
def test_encoder_and_size_sections(bench_out):
    result = bench_out[0]
    enc = result["encoders"]
    for name in ("torch", "onnx"):
        assert enc["query_batch1"][name]["n"] == 10 and enc["query_batch1"][name]["p50_ms"] > 0
        assert enc["corpus"][name]["docs"] == 32 and enc["corpus"][name]["docs_per_s"] > 0
    assert enc["query_batch1"]["onnx_speedup_p50"] > 0
    sizes = result["sizes"]
    docids = json.loads((Path(result["bundle"]["path"]) / "docids.json").read_text())
    assert sizes["docs"] == len(docids)
    assert sizes["parts"]["dense.faiss"]["bytes_per_doc"] >= 4 * 128  # float32 vectors of the 128-d model
    assert sizes["parts"]["impact"]["bytes_per_doc"] > 0
    assert result["bytes_per_doc_dense"] == sizes["parts"]["dense.faiss"]["bytes_per_doc"]


@pytest.mark.slow
def test_top_n_curve_keeps_at_most_n_terms(bench_out):
    rows = bench_out[0]["top_n"]["rows"]
    assert [r["top_n"] for r in rows] == [4, 16, "all"]
    assert rows[0]["mean_active_terms_doc"] <= 4 and rows[1]["mean_active_terms_doc"] <= 16
    terms = [r["mean_active_terms_doc"] for r in rows]
    assert terms == sorted(terms) and terms[-1] > terms[0]
    for r in rows:
        for mode in ("lexical", "uni"):
            assert r[mode]["qps"] > 0 and 0.0 <= r[mode]["ndcg@10"] <= 1.0


@pytest.mark.slow
def test_http_section_served_every_level_without_failures(bench_out, repo_root):
    http = bench_out[0]["http"]
    cfg = load_params(repo_root / "params.yaml", "tiny").section("bench")
    assert http["host"] == "127.0.0.1" and set(http["levels"]) == {str(c) for c in cfg.http.concurrency}
    # the figures say which server made them: its workers (serve.workers) and the mode /readyz named
    assert http["workers"] == load_params(repo_root / "params.yaml", "tiny").section("serve").workers
    assert http["served_mode"] in bench_out[0]["modes"]
    # each mode warmed at the highest concurrency first, so every worker (and its JVM) is warm (E98)
    assert http["warmup"] == {"clients": max(cfg.http.concurrency), "failed": 0,
                              "requests_per_mode": [cfg.http.warmup_requests] * 2}
    for row in http["levels"].values():
        assert row["failed"] == 0 and 0 < row["n"] <= 48 and row["p95_ms"] > 0
    # each level in rounds, the served and reference modes taking turns on new connections
    for row in (*http["levels"].values(), *http["reference"]["levels"].values()):
        assert row["rounds"] == cfg.http.rounds > 1
        assert len(row["qps_by_round"]) == len(row["connections_by_worker"]) == cfg.http.rounds
    landed = [c for row in http["levels"].values() for c in row["connections_by_worker"] if c]
    assert landed and all(len(c) == 1 for c in landed), landed  # the tiny server's one worker took them all
    assert "connections per worker by round" in bench_out[1]


@pytest.mark.slow
def test_markdown_report_has_every_section_and_the_targets(bench_out, repo_root):
    result, md, _ = bench_out
    for header in ("## Targets", "## Retrieval modes", "## Encoders", "## Index sizes", "## Top-N sparsification",
                   "## Serving over HTTP"):
        assert header in md
    assert result["machine"]["cpu_model"] in md
    goal = load_params(repo_root / "params.yaml", "tiny").section("bench").targets
    assert [t["bound"] for t in result["targets"]] == [f"<= {goal.uni_vs_bm25_p50}", f"<= {goal.fast_vs_bm25_p50}",
                                                       f">= {goal.onnx_speedup_p50}", f"< {goal.http_p95_ms}",
                                                       f">= {goal.http_qps}", f">= {goal.http_qps_vs_reference}",
                                                       f"<= {goal.http_p50_overhead_ms}"]
    assert all(t["measured"] is not None for t in result["targets"])


@pytest.mark.slow
def test_growth_section_times_the_served_mode_beside_lucene_bm25(bench_out, repo_root):
    result, markdown, out = bench_out
    growth = result["growth"]
    cfg = load_params(repo_root / "params.yaml", "tiny").section("bench").growth
    assert [r["docs"] for r in growth["rows"]] == cfg.sizes
    for row in growth["rows"]:
        assert row["modes"]["lucene_bm25"]["n"] == cfg.queries and row["modes"]["lucene_bm25"]["p50_ms"] > 0
        assert row["served_switches"] == {"sparse": False, "dense": False}  # below retrieval.pruning's sizes
        for route in ("hybrid_fast", "bm25_memory", "lexical_static", "dense_feedback"):
            figures = row["modes"][route]
            assert figures["exhaustive"]["n"] == figures["pruned"]["n"] == figures["served"]["n"] == cfg.queries
            assert 0.0 <= figures["top10_agreement"] <= 1.0
            assert figures["served_top10_agreement"] == 1.0  # served here is the exhaustive form itself
            assert figures["served_p50_vs_lucene_bm25"] > 0
        assert row["memory_bm25_vs_lucene_top10"] > 0.9  # Lucene's weights in memory rank as Lucene does
        side = row["side_by_side"]  # the served mode and Lucene timed query by query
        assert side["rounds"] == cfg.side_by_side_rounds == len(side["per_round_vs_lucene_bm25"])
        assert side["lucene_bm25_p50_ms"] > 0 and side["hybrid_fast_p95_ms"] >= side["hybrid_fast_p50_ms"] > 0
        assert side["p50_vs_lucene_bm25"] == pytest.approx(side["hybrid_fast_p50_ms"] / side["lucene_bm25_p50_ms"], rel=0.01)
        assert row["served_bytes_per_doc"]["total"] > row["served_bytes_per_doc"]["dense_vectors"] > 0
        assert all(0.0 <= v <= 1.0 for v in row["shape_ks"].values())
        assert [p["nprobe"] for p in row["ivf_nprobe"]] == [min(n, p["nlist"]) for n, p in zip(cfg.nprobe_sweep, row["ivf_nprobe"], strict=True)]
        assert len(row["posting_share"]) == len(cfg.posting_share_sweep) * len(cfg.candidates_sweep)
    # the JVM is the process's: warmed once, before the first size's timings (E100)
    warm = load_params(repo_root / "params.yaml", "tiny").section("bench").jvm_warmup_queries
    assert growth["rows"][0]["jvm_warmup"]["queries"] == warm > 0
    assert all("jvm_warmup" not in row for row in growth["rows"][1:])
    assert f"{warm} untimed BM25 searches" in (out / "growth.md").read_text()
    assert (out / "growth.md").is_file() and (out / growth["plot"]).is_file()
    assert "[growth.md](growth.md)" in markdown


@pytest.mark.slow
def test_only_growth_replaces_the_growth_section_of_the_full_run_beside_it(bench_out, tiny_bundle, shared_data,
                                                                          repo_root):
    result, _, out = bench_out
    code = main(["bench", "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--data", str(shared_data),
                 "--bundle", str(tiny_bundle), "--out", str(out), "--only", "growth"])
    assert code == 0
    after = json.loads((out / "bench.json").read_text())
    assert after["growth"] == json.loads((out / "growth.json").read_text()) != result["growth"]
    assert after["modes"] == result["modes"] and after["started_at"] == result["started_at"]  # the rest as measured
    assert "[growth.md](growth.md)" in (out / "bench.md").read_text()
