"""bench stage: speed and size figures of the CANDIDATE bundle (artifacts/index/bundle), for the gate.

A short run of `uniret bench` (params `bench.stage`): latency per mode with query encoding
(the gate's served mode always among them), ONNX query encoding, index sizes and a short HTTP run
on 127.0.0.1. Writes artifacts/bench/bench.{json,md}; the gate budgets latency and index size
from that file. A section that fails is recorded with its reason (the gate then blocks on the
budget it could not measure); a missing bundle is an error.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from uniret.bench.production import beside_production
from uniret.bench.report import JSON_FILE, write_results
from uniret.bench.runner import SECTIONS, bench_config, bench_queries, run_bench
from uniret.config.serving import BenchConfig
from uniret.registry.configured import registry_root
from uniret.registry.gate import latency_mode, resolve_gate_config
from uniret.registry.integrity import verified_bundle
from uniret.registry.pointer import read_pointer
from uniret.runtime import VALIDATED_DATA, StageContext, stage_output

log = logging.getLogger("uniret.bench")

STAGE = "bench"
BUNDLE = "bundle"  # the index stage's bundle folder


def stage_config(cfg: BenchConfig, served_mode: str) -> BenchConfig:
    """The `bench` section narrowed to the stage's short run, with `served_mode` timed and served over HTTP."""
    short = cfg.stage
    modes = cfg.modes if served_mode in cfg.modes else [*cfg.modes, served_mode]
    http = dataclasses.replace(short.http, mode=short.http.mode or served_mode)
    return dataclasses.replace(cfg, max_queries=short.max_queries, warmup_queries=short.warmup_queries,
                               jvm_warmup_queries=short.jvm_warmup_queries, encode_queries=short.encode_queries,
                               modes=modes, http=http)


def _data_root(ctx: StageContext, dataset: str) -> Path:
    """The validated snapshot when validate wrote one for `dataset`, else the raw data root."""
    validated = ctx.stage_dir("validate") / VALIDATED_DATA
    return validated if (validated / dataset / "corpus.jsonl").is_file() else ctx.data_root


def summary(result: dict[str, Any], mode: str) -> dict[str, Any]:
    """The manifest's metrics: the served mode's latency, sizes and which sections failed."""
    row = (result.get("modes") or {}).get(mode) or {}
    levels = (result.get("http") or {}).get("levels") or {}
    top = max(levels, key=int) if levels else None
    failed = sorted(s for s in SECTIONS if isinstance(result.get(s), dict) and result[s].get("skipped")
                    and not str(result[s]["skipped"]).startswith("--skip"))
    return {
        "mode": mode,
        "p50_ms": row.get("p50_ms"),
        "p95_ms": row.get("p95_ms"),
        "p50_vs_bm25": row.get("p50_vs_bm25"),
        "http_clients": int(top) if top else None,
        "http_p95_ms": levels[top]["p95_ms"] if top else None,
        "http_qps": levels[top]["qps"] if top else None,
        "bytes_per_doc_dense": result.get("bytes_per_doc_dense"),
        "bytes_per_doc_sparse": result.get("bytes_per_doc_sparse"),
        "sections_failed": failed,
        "p50_vs_production": (result.get("vs_production") or {}).get("p50_vs_production"),
        "p95_vs_production": (result.get("vs_production") or {}).get("p95_vs_production"),
        "bench_seconds": result.get("seconds"),
    }


def _beside_production(ctx: StageContext, bundle: Path, mode: str, queries: dict[str, str], cfg: BenchConfig,
                       rounds: int) -> dict[str, Any]:
    """The candidate's `mode` timed beside the production bundle's (verified first); {"skipped": why}
    on a cold start, and {"failed": why} when production cannot be verified or timed."""
    root = registry_root(ctx.params)
    pointer = read_pointer(root) if root.is_dir() else None
    if pointer is None:
        return beside_production(bundle, None, None, mode, queries, cfg.k, cfg.threads, cfg.warmup_queries, rounds, None)
    production = root / pointer["bundle"]
    try:
        verified_bundle(production, root, "not timed")
        return beside_production(bundle.resolve(), production, pointer["version"], mode, queries, cfg.k, cfg.threads,
                                 cfg.warmup_queries, rounds, ctx.params.section("retrieval"))
    except Exception as exc:  # recorded, and the gate blocks on the rule it cannot check
        log.warning("bench: production %s not timed: %s", pointer["version"], exc)
        return {"failed": f"production {pointer['version']} not timed: {type(exc).__name__}: {exc}"}


def run(ctx: StageContext) -> dict[str, Any]:
    """Benchmark the candidate bundle; bench.json/bench.md go to artifacts/bench."""
    bundle = ctx.require("index") / BUNDLE
    if not (bundle / "manifest.json").is_file():
        raise FileNotFoundError(f"{bundle}: no index bundle; run `uniret index` first")
    verified_bundle(bundle, None, "not measured")  # the index stage's checksums, before any timing
    mode = latency_mode(resolve_gate_config(ctx.params))
    base = bench_config(ctx.params)
    cfg = stage_config(base, mode)
    skip = set(SECTIONS) - set(base.stage.sections)
    with stage_output(ctx, STAGE, sections=["bench"], inputs={"bundle": bundle}) as (out, manifest):
        data_root = _data_root(ctx, cfg.dataset)
        result = run_bench(ctx.params, bundle.resolve(), data_root, out, skip=skip, cfg=cfg, serving_only=True)
        if base.stage.production_rounds:
            result["vs_production"] = _beside_production(ctx, bundle, mode, bench_queries(data_root, cfg)[0], cfg,
                                                         base.stage.production_rounds)
            write_results(result, out)
        manifest["metrics"] = summary(result, mode)
        manifest["outputs"] = {"bench": JSON_FILE}
    log.info("bench: %s", manifest["metrics"])
    return manifest["metrics"]
