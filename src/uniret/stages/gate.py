"""Gate stage: candidate vs production vs BM25 against params `gate:`; writes decision.json/.md.

A blocked candidate is a decision (passed=false), not an error: the stage succeeds and promote
skips. Missing evaluate metrics are an error (there is nothing to decide on).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from uniret.bench.report import JSON_FILE as BENCH_JSON
from uniret.config.gate import GateConfig
from uniret.core.jsonio import read_json, read_optional_json
from uniret.registry.configured import registry_root
from uniret.registry.gate import GateInputs, decide, decision_markdown, production_ref, resolve_gate_config
from uniret.registry.pointer import POINTER
from uniret.runtime import StageContext, stage_output
from uniret.utils.files import atomic_write_json, atomic_write_text

log = logging.getLogger("uniret.gate")

DECISION_JSON = "decision.json"
DECISION_MD = "decision.md"
METRICS_JSON = "metrics.json"  # written by the evaluate stage
INDEX_BUNDLE = "bundle"  # the index stage's bundle folder
BENCH_STAGE = "bench"  # its bench.json: latency and sizes of the candidate bundle


def gather_inputs(ctx: StageContext, cfg: GateConfig) -> tuple[GateInputs, dict[str, Path]]:
    """Read every input of the gate; absent optional files become skip reasons."""
    metrics_path = ctx.require("evaluate") / METRICS_JSON
    if not metrics_path.is_file():
        raise FileNotFoundError(f"{metrics_path}: evaluate metrics not found; run `uniret evaluate` first")
    index_manifest = ctx.stage_dir("index") / INDEX_BUNDLE / "manifest.json"
    bench_path = ctx.stage_dir(BENCH_STAGE) / BENCH_JSON  # the candidate's own figures, not a committed file
    index, index_absent = read_optional_json(index_manifest, "index bundle manifest")
    bench, bench_absent = read_optional_json(bench_path, "bench stage results")
    absent = {k: v for k, v in (("index", index_absent), ("bench", bench_absent)) if v}
    root = registry_root(ctx.params)
    inputs = GateInputs(
        metrics=read_json(metrics_path),
        production=production_ref(root, cfg),
        index_metrics=None if index is None else (index.get("metrics") or {}),
        bench=bench,
        absent=absent,
    )
    files = {"metrics": metrics_path, "index_manifest": index_manifest, "bench": bench_path,
             "production_pointer": root / POINTER}
    return inputs, files


def run(ctx: StageContext) -> dict[str, Any]:
    """Decide whether the candidate may be promoted; never raises on a blocked decision."""
    cfg: GateConfig = resolve_gate_config(ctx.params)
    inputs, files = gather_inputs(ctx, cfg)
    decision = decide(cfg, inputs)
    with stage_output(ctx, "gate", sections=["gate"], inputs=files) as (out, manifest):
        atomic_write_json(out / DECISION_JSON, decision.to_dict())
        atomic_write_text(out / DECISION_MD, decision_markdown(decision))
        counts = {s: sum(c.status == s for c in decision.checks) for s in ("pass", "fail", "skipped")}
        manifest["metrics"] = {"passed": decision.passed, "production": decision.production, **counts}
    if decision.passed:
        log.info("gate PASSED for %s (%d checks, %d skipped)", cfg.candidate_system, len(decision.checks),
                 counts["skipped"])
    else:
        log.warning("gate BLOCKED %s:\n  %s", cfg.candidate_system, "\n  ".join(decision.reasons()))
    return manifest["metrics"]
