"""Gate stage: candidate vs production vs BM25 against params `gate:`; writes decision.json/.md.

A blocked candidate is a decision (passed=false), not an error: the stage succeeds and promote
skips. Missing evaluate metrics are an error (there is nothing to decide on).

Production is judged by scores measured on this run's data: those stored at its promotion when
their basis (dataset files, split, slice) is this run's, else its served mode re-scored here
(gate.rescore_production; written to production_metrics.json and, per query, to
production/per_query/, for the report).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from uniret.bench.report import JSON_FILE as BENCH_JSON
from uniret.config.gate import GateConfig
from uniret.core.jsonio import read_json, read_optional_json
from uniret.evaluation.compare_systems import read_per_query
from uniret.evaluation.newest_traffic import NEWEST_TRAFFIC, PRODUCTION_SYSTEM, scores_dir
from uniret.evaluation.outputs import PER_QUERY_DIR
from uniret.registry.basis import basis_differences, evaluation_basis
from uniret.registry.bundles import EVALUATION_DIR
from uniret.registry.configured import registry_root
from uniret.registry.gate import (
    GateInputs,
    ProductionRef,
    QueryScores,
    decide,
    decision_markdown,
    production_ref,
    resolve_gate_config,
)
from uniret.registry.integrity import IntegrityError, verify_published
from uniret.registry.pointer import POINTER
from uniret.registry.traffic_check import TrafficScores
from uniret.runtime import StageContext, stage_output
from uniret.utils.files import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from uniret.evaluation.scoring import Scores

log = logging.getLogger("uniret.gate")

DECISION_JSON = "decision.json"
DECISION_MD = "decision.md"
PRODUCTION_METRICS_JSON = "production_metrics.json"  # production re-scored on this run's data...
PRODUCTION_DIR = "production"  # ...and its per_query/<system>/<dataset>.json (the evaluate stage's layout)
METRICS_JSON = "metrics.json"  # written by the evaluate stage
INDEX_BUNDLE = "bundle"  # the index stage's bundle folder
BENCH_STAGE = "bench"  # its bench.json: latency and sizes of the candidate bundle


def per_query_scores(evaluated: Path, system: str, datasets: list[str], metric: str) -> tuple[QueryScores | None, str]:
    """{dataset: {query: metric}} of `system` from a folder holding per_query/ (None and why when a
    file is missing or unreadable: the gate then falls back to the point rule, as before per-query scores)."""
    try:
        return {d: read_per_query(evaluated, system, d, metric) for d in datasets}, ""
    except (OSError, ValueError) as exc:  # DataError is a ValueError
        return None, f"per-query scores unreadable: {exc}"


def traffic_scores(evaluated: Path, metrics: dict[str, Any], cfg: GateConfig) -> TrafficScores | None:
    """Evaluate's newest-traffic section with both sides' per-query values of gate.newest_traffic's
    judgments and metric, when it scored them (None: metrics.json has no such section)."""
    section = metrics.get(NEWEST_TRAFFIC)
    if not isinstance(section, dict):
        return None
    out = TrafficScores(section)
    if section.get("status") != "scored" or (section.get("production") or {}).get("status") != "scored":
        return out
    nt, folder = cfg.newest_traffic, scores_dir(evaluated)
    try:
        out.candidate = read_per_query(folder, str((section.get("candidate") or {}).get("system")), nt.judgments,
                                       nt.metric)
        out.production = read_per_query(folder, PRODUCTION_SYSTEM, nt.judgments, nt.metric)
    except (OSError, ValueError) as exc:  # DataError is a ValueError: the check fails, naming the file
        out.candidate = out.production = None
        out.unreadable = str(exc)
    return out


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
    metrics = read_json(metrics_path)
    candidate_queries = None
    if cfg.regression_rule == "paired":
        candidate_queries, why = per_query_scores(metrics_path.parent, cfg.candidate_system,
                                                  sorted(metrics.get("datasets") or {}), cfg.metric)
        if candidate_queries is None:
            log.warning("gate: the candidate's %s", why)
    inputs = GateInputs(
        metrics=metrics,
        production=production_ref(root, cfg),
        index_metrics=None if index is None else (index.get("metrics") or {}),
        bench=bench,
        absent=absent,
        candidate_queries=candidate_queries,
        train_dataset=ctx.params.section("data").train_dataset,
        newest_traffic=traffic_scores(metrics_path.parent, metrics, cfg),
    )
    files = {"metrics": metrics_path, "index_manifest": index_manifest, "bench": bench_path,
             "production_pointer": root / POINTER}
    return inputs, files


def judged_production(ctx: StageContext, cfg: GateConfig,
                      stored: ProductionRef) -> tuple[ProductionRef, Scores | None]:
    """Production with the scores it is judged by, and the re-scoring's Scores (None: stored ones).

    Scores that cannot be made comparable (re-scoring failed) leave the regression check failing
    with the reason: a candidate is never waved through on figures from other data."""
    if stored.bundle is not None:
        # Production's manifest (its stored metrics) and evaluation/per_query are read only when the
        # bundle passes the verification serving applies; a damaged bundle is not re-scored either
        # (its index files may be what changed): the regression check fails and says why.
        try:
            verify_published(stored.bundle)
        except IntegrityError as exc:
            failure = (f"production {stored.version} fails verification, so its stored scores are not used "
                       f"and it is not re-scored: {exc} (`uniret registry verify` lists every problem)")
            log.error("gate: %s", failure)
            return dataclasses.replace(stored, kind="unavailable", why=failure, queries=None), None
    validate = ctx.stage_dir("validate")
    differences = basis_differences(stored.basis, evaluation_basis(ctx.params, validate if validate.is_dir() else None))
    why = "; ".join(differences) or None
    if cfg.rescore_production == "never" or (cfg.rescore_production == "auto" and not differences):
        kind = "stored_other_data" if differences else "stored"
        queries, no_queries = None, "production's stored per-query scores were measured on other data"
        if kind == "stored" and stored.bundle is not None:
            datasets = sorted(stored.metrics.get("datasets") or {})
            queries, no_queries = per_query_scores(stored.bundle / EVALUATION_DIR, stored.system, datasets, cfg.metric)
            no_queries = f"production {stored.version}'s {no_queries}" if queries is None else ""
        return dataclasses.replace(stored, kind=kind, why=why, queries=queries, no_queries=no_queries), None
    why = why or "gate.rescore_production is always"
    log.info("re-scoring production %s (%s) on this run's data: %s", stored.version, stored.system, why)
    from uniret.evaluation.rescore import score_bundle_mode  # torch, onnxruntime: only when re-scoring

    try:
        scores = score_bundle_mode(ctx, stored.bundle, stored.system)
    except Exception as exc:  # any failure is a decision: blocked with its reason, not a crash
        log.exception("re-scoring production %s failed", stored.version)
        failure = (f"production {stored.version} could not be re-scored on this run's data ({why}): "
                   f"{type(exc).__name__}: {exc}")
        return dataclasses.replace(stored, kind="unavailable", why=failure), None
    queries = {d: {q: float(v[cfg.metric]) for q, v in rows.items()}
               for d, rows in scores.per_query[stored.system].items()}
    return dataclasses.replace(stored, metrics=scores.doc, kind="rescored", why=why, queries=queries), scores


def run(ctx: StageContext) -> dict[str, Any]:
    """Decide whether the candidate may be promoted; never raises on a blocked decision."""
    cfg: GateConfig = resolve_gate_config(ctx.params)
    inputs, files = gather_inputs(ctx, cfg)
    rescored = None
    if inputs.production is not None:
        inputs.production, rescored = judged_production(ctx, cfg, inputs.production)
    decision = decide(cfg, inputs)
    with stage_output(ctx, "gate", sections=["gate", "data", "evaluate"], inputs=files) as (out, manifest):
        if rescored is not None:
            prod = inputs.production
            atomic_write_json(out / PRODUCTION_METRICS_JSON, {"version": prod.version, "system": prod.system,
                                                              "why": prod.why, "metrics": rescored.doc})
            for dataset, rows in rescored.per_query[prod.system].items():
                atomic_write_json(out / PRODUCTION_DIR / PER_QUERY_DIR / prod.system / f"{dataset}.json", rows)
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
