"""The bench stage on a real tiny bundle (ONNX, faiss, Lucene, uvicorn on 127.0.0.1), and the gate
reading its figures: a candidate over its latency or index-size budget is blocked."""

from __future__ import annotations

import copy
import json

import pytest

from uniret.config import Params
from uniret.runtime import StageContext, make_context
from uniret.stages import bench as bench_stage
from uniret.stages import gate as gate_stage


def _ctx(base: StageContext, gate: dict) -> StageContext:
    """`base` with gate overrides, and a registry of its own beside its artifacts (empty: a cold start),
    never the checkout's registry/ that a `make demo` may have filled."""
    raw = copy.deepcopy(base.params.raw)
    raw["gate"] = {**raw["gate"], **gate}
    # over the active profile's gate entries too: the tiny profile's latency ratio (100) would else win
    profiles = raw["gate"].get("profiles") or {}
    if base.params.profile in profiles:
        raw["gate"]["profiles"] = {**profiles, base.params.profile: {**profiles[base.params.profile], **gate}}
    raw["registry"] = {**raw["registry"], "root": str(base.artifacts.parent / "registry")}
    return StageContext(Params(raw=raw, profile=base.params.profile, path=base.params.path), base.data_root,
                        base.artifacts)


def _metrics() -> dict:
    """evaluate's metrics.json, quality well inside the tiny gate: only the budgets decide."""
    scores = {"uni": {"ndcg@10": 0.7}, "bm25": {"ndcg@10": 0.6}}
    return {"datasets": {"scifact": scores}, "macro": scores}


@pytest.fixture(scope="module")
def benched(tiny_bundle, tmp_path_factory, repo_root, shared_data):
    """artifacts/ holding the tiny bundle as the index stage's output, evaluate metrics, and the bench stage run."""
    artifacts = tmp_path_factory.mktemp("bench-stage") / "artifacts"
    artifacts.mkdir()
    (artifacts / "index").symlink_to(tiny_bundle.parent, target_is_directory=True)
    (artifacts / "evaluate").mkdir()
    (artifacts / "evaluate" / "metrics.json").write_text(json.dumps(_metrics()))
    (artifacts / "evaluate" / "manifest.json").write_text(json.dumps({"stage": "evaluate"}))
    ctx = _ctx(make_context(repo_root / "params.yaml", "tiny", str(shared_data), artifacts),
               {"candidate_system": "uni"})
    metrics = bench_stage.run(ctx)
    return ctx, metrics, json.loads((artifacts / "bench" / "bench.json").read_text())


def test_bench_stage_measures_the_served_mode_sizes_and_http(benched):
    ctx, metrics, bench = benched
    assert (ctx.stage_dir("bench") / "bench.md").is_file() and (ctx.stage_dir("bench") / "manifest.json").is_file()
    uni = bench["modes"]["uni"]
    assert uni["n"] == 12 and 0 < uni["p50_ms"] <= uni["p95_ms"] and metrics["p95_ms"] == uni["p95_ms"]
    assert bench["encoders"]["query_batch1"]["onnx"]["n"] == 10 and "torch" not in bench["encoders"]["query_batch1"]
    assert bench["bytes_per_doc_dense"] >= 4 * 128 and bench["sizes"]["parts"]["dense.faiss"]["bytes"] > 0
    assert bench["top_n"] == {"skipped": "--skip on the command line"}
    http = bench["http"]
    assert http["mode"] == "uni" and set(http["levels"]) == {"1", "4"}
    assert all(level["failed"] == 0 and level["n"] > 0 for level in http["levels"].values())
    assert all(level["server_rss_mb"] > 100 for level in http["levels"].values())  # the server's bundle, JVM and ONNX
    assert metrics["sections_failed"] == [] and metrics["http_clients"] == 4
    # a cold start (empty registry): nothing to time the candidate beside
    assert bench["vs_production"] == {"skipped": "no production bundle (cold start): nothing to compare with"}
    assert metrics["p50_vs_production"] is None


def test_gate_passes_within_budget_and_blocks_a_slow_or_oversized_candidate(benched):
    ctx, _, bench = benched
    p95, dense = bench["modes"]["uni"]["p95_ms"], bench["bytes_per_doc_dense"]

    gate_stage.run(_ctx(ctx, {"candidate_system": "uni", "max_latency_p95_ms": 10 * p95 + 100}))
    decision = json.loads((ctx.stage_dir("gate") / "decision.json").read_text())
    assert decision["passed"], decision
    latency = next(c for c in decision["checks"] if c["name"] == "latency_p95_ms")
    assert latency["status"] == "pass" and latency["value"] == p95

    slow = _ctx(ctx, {"candidate_system": "uni", "max_latency_p95_ms": p95 / 2})  # the bundle breaks this budget
    assert gate_stage.run(slow)["passed"] is False
    failed = {c["name"]: c for c in json.loads((ctx.stage_dir("gate") / "decision.json").read_text())["checks"]
              if c["status"] == "fail"}
    assert set(failed) == {"latency_p95_ms"} and failed["latency_p95_ms"]["value"] == p95

    big = _ctx(ctx, {"candidate_system": "uni", "max_latency_p95_ms": None, "max_bytes_per_doc_dense": dense / 2})
    assert gate_stage.run(big)["passed"] is False
    failed = [c for c in json.loads((ctx.stage_dir("gate") / "decision.json").read_text())["checks"]
              if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["index_bytes_per_doc_dense"] and failed[0]["value"] > dense / 2


def test_gate_blocks_when_the_served_mode_was_not_benchmarked(benched):
    ctx, _, _ = benched
    served = _ctx(ctx, {"candidate_system": "clear", "max_latency_p95_ms": 1000.0})  # not measured by this run
    metrics = _metrics()
    for table in (metrics["datasets"]["scifact"], metrics["macro"]):
        table["clear"] = table["uni"]
    (ctx.stage_dir("evaluate") / "metrics.json").write_text(json.dumps(metrics))
    try:
        assert gate_stage.run(served)["passed"] is False
    finally:
        (ctx.stage_dir("evaluate") / "metrics.json").write_text(json.dumps(_metrics()))
    latency = next(c for c in json.loads((ctx.stage_dir("gate") / "decision.json").read_text())["checks"]
                   if c["name"] == "latency_p95_ms")
    assert latency["status"] == "fail" and latency["reason"].startswith("cannot be measured")
    assert "'clear'" in latency["reason"]


def test_gate_blocks_a_mode_slower_than_bm25_by_the_configured_ratio(benched, tiny_bundle):
    """Real BM25 and a mode made slow by a sleep, timed side by side by the bench's own timer: the
    ratio rule blocks the slow one, and the reference http run in bm25 mode is recorded."""
    import time

    from uniret.bench.modes import bench_modes
    from uniret.retrieval.base import Searcher
    from uniret.retrieval.bundle import load_searchers

    class Slow(Searcher):
        def __init__(self, inner):
            self.inner, self.encoder = inner, None

        def search_batch(self, batch, k):
            time.sleep(0.05)
            return self.inner.search_batch(batch, k)

    ctx, _, bench = benched
    reference = bench["http"]["reference"]
    assert reference["mode"] == "bm25" and set(reference["levels"]) == set(bench["http"]["levels"])
    assert all(level["failed"] == 0 and level["n"] > 0 for level in reference["levels"].values())
    searchers = load_searchers(tiny_bundle, modes=["bm25", "hybrid_fast"])
    searchers["uni"] = Slow(searchers["hybrid_fast"])
    queries = {f"q{i}": q for i, q in enumerate(["protein folding", "vitamin d", "cell death", "gene expression"])}
    figures = {"modes": bench_modes(searchers, ["bm25", "uni"], queries, {}, 10, 10, 1)}
    (ctx.stage_dir("bench") / "bench.json").write_text(json.dumps({**bench, **figures}))
    try:
        assert gate_stage.run(_ctx(ctx, {"candidate_system": "uni", "max_latency_p95_ms": None,
                                         "max_latency_ratio_bm25": 1.5}))["passed"] is False
    finally:
        (ctx.stage_dir("bench") / "bench.json").write_text(json.dumps(bench))
    check = next(c for c in json.loads((ctx.stage_dir("gate") / "decision.json").read_text())["checks"]
                 if c["name"] == "latency_p50_vs_bm25")
    assert check["status"] == "fail" and check["value"] == pytest.approx(figures["modes"]["uni"]["p50_vs_bm25"], abs=1e-3)
    assert check["value"] > 1.5
