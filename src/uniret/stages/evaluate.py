"""evaluate stage: BEIR-style metrics of BM25 and every retrieval mode on the eval datasets.

Reads the validated eval datasets (their `data.eval_split` qrels) and the runs of every
registered run source (uniret.evaluation.sources), then writes under artifacts/evaluate/:
  metrics.json   {"datasets": {dataset: {system: {metric: v}}}, "macro": {system: {...}},
                  "zero_shot_macro": {system: {...}}, "num_queries": {dataset: n},
                  "overlap": {train dataset: its seen / novel test queries' scores}}  (DVC metrics)
  metrics.md     the same as a markdown table
  per_query/<system>/<dataset>.json   {query: {metric: v}}
  runs/<system>/<dataset>.trec        for sources whose runs are not kept upstream
  newest_traffic/per_query/<system>/<judgments>.json, newest_traffic/runs/<system>.trec   the served mode
                 of the candidate's bundle and of production's ("production") on the feedback stage's held-out
                 day (uniret.evaluation.newest_traffic); metrics.json "newest_traffic" summarises them, or says
                 why they were skipped
The manifest records which sources ran and the expected-score check (expected).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from uniret.config import ConfigError
from uniret.config.modes import EVAL_MODES
from uniret.core.errors import StageFailed
from uniret.evaluation import newest_traffic as traffic
from uniret.evaluation.bundle_source import BUNDLE
from uniret.evaluation.expected import compare, load_expected, not_applicable
from uniret.evaluation.heldout import HeldoutDay, read_heldout
from uniret.evaluation.outputs import write_evaluation
from uniret.evaluation.overlap_scores import OVERLAP_KEY, dataset_split, overlap_section
from uniret.evaluation.scoring import score_systems
from uniret.evaluation.sources import RUN_SOURCES, RunSource, collect_runs, load_source
from uniret.evaluation.tables import metrics_table
from uniret.registry.bundles import read_manifest
from uniret.registry.configured import registry_root
from uniret.registry.errors import RegistryError
from uniret.registry.gate import production_ref, resolve_gate_config
from uniret.registry.integrity import IntegrityError, verified_bundle, verify_published
from uniret.runtime import VALIDATED_DATA, StageContext, stage_output

log = logging.getLogger("uniret.evaluation")

STAGE = "evaluate"


def _expected_paths(ctx: StageContext, files: list[str]) -> list[Path]:
    """Reference files, relative paths taken from params.yaml's folder (the repo root under DVC)."""
    base = ctx.params.path.parent if ctx.params.path else Path.cwd()
    return [p if p.is_absolute() else base / p for p in map(Path, files)]


def check_references(ctx: StageContext, doc: dict[str, Any]) -> dict[str, Any]:
    """Run the expected-score checks of params `evaluate.expected_scores` on a metrics document.

    References are measured on whole datasets, so a sliced profile (data.slice set) skips them.
    """
    cfg = ctx.params.section("evaluate")
    paths = _expected_paths(ctx, cfg.expected_scores)
    result: dict[str, Any] = {"files": [str(p) for p in paths], "failures": []}
    slice_cfg = ctx.params.section("data").slice
    if not paths:
        return {**result, "status": "skipped", "reason": "no expected_scores configured"}
    if slice_cfg.max_queries is not None or slice_cfg.max_docs is not None:
        return {**result, "status": "skipped", "reason": "data is sliced (data.slice); references are on whole datasets"}
    recipe = ctx.params.section("model").recipe
    result["skipped"] = []
    for path in paths:
        expected = load_expected(path)
        if reason := not_applicable(doc, expected, recipe):
            result["skipped"].append(reason)
        else:
            result["failures"].extend(compare(doc, expected))
    if len(result["skipped"]) == len(paths):
        return {**result, "status": "skipped", "reason": "; ".join(result["skipped"])}
    result["status"] = "fail" if result["failures"] else "pass"
    return result


def _log_results(split: str, table: str, references: dict[str, Any]) -> None:
    log.info("evaluation (%s split):\n%s", split, table)
    for failure in references["failures"]:
        log.warning("expected score missed: %s", failure)
    if references["status"] == "skipped":
        log.info("expected-score check skipped: %s", references["reason"])
    else:
        for reason in references.get("skipped", []):
            log.info("expected-score file skipped: %s", reason)


def overlap_sections(ctx: StageContext, per_query: dict[str, Any]) -> dict[str, Any]:
    """The train dataset's test queries scored as seen and novel (uniret.data.overlap); {} when it
    is not evaluated or has no train split."""
    data_cfg, cfg = ctx.params.section("data"), ctx.params.section(STAGE)
    name = data_cfg.train_dataset
    if name not in data_cfg.eval_datasets:
        return {}
    split = dataset_split(ctx.dataset(name), data_cfg.train_split, data_cfg.eval_split, cfg.overlap_jaccard)
    if split is None:
        return {}
    log.info("%s %s split vs %s: %d seen, %d novel queries", name, data_cfg.eval_split, data_cfg.train_split,
             len(split.seen), len(split.novel))
    return {name: overlap_section(split, per_query, name, cfg.metrics)}


def _production_traffic(ctx: StageContext, out: Path, day: HeldoutDay, candidate_bundle: Path) -> dict[str, Any]:
    """Production's served mode on the held-out day, written as system "production"; its status says
    why not when it cannot be: none (cold start), other_corpus (the gate skips), unavailable (the gate fails)."""
    cfg = resolve_gate_config(ctx.params)
    try:
        prod = production_ref(registry_root(ctx.params), cfg)
    except (RegistryError, OSError, ValueError) as exc:  # a damaged pointer or manifest: the gate fails on it
        return {"status": "unavailable", "reason": f"production cannot be read: {exc}"}
    if prod is None:
        return {"status": "none", "reason": "no production bundle (cold start)"}
    info = {"version": prod.version, "system": prod.system}
    try:
        verify_published(prod.bundle)
    except IntegrityError as exc:
        return {**info, "status": "unavailable", "reason": f"production {prod.version} fails verification: {exc}"}
    ours, theirs = read_manifest(candidate_bundle).get("train_dataset"), read_manifest(prod.bundle).get("train_dataset")
    if ours != theirs:
        return {**info, "status": "other_corpus", "reason": f"production {prod.version} indexes {theirs!r}, the "
                f"candidate {ours!r}: the held-out day's judgments name the candidate's corpus only"}
    if prod.system not in EVAL_MODES:
        return {**info, "status": "unavailable", "reason": f"production {prod.version} serves {prod.system!r}, "
                "not a bundle retrieval mode"}
    try:
        run = traffic.bundle_run(ctx, prod.bundle, prod.system, day.queries)
        per_query = traffic.score_run(day, run)
    except Exception as exc:  # a decision for the gate (blocked with the reason), not a crash of evaluate
        log.exception("scoring production %s on the newest traffic failed", prod.version)
        return {**info, "status": "unavailable",
                "reason": f"production {prod.version} could not be scored: {type(exc).__name__}: {exc}"}
    traffic.write_scores(out, traffic.PRODUCTION_SYSTEM, per_query, run)
    return {**info, "status": "scored", "scores": traffic.summary(per_query)}


def newest_traffic(ctx: StageContext, out: Path) -> dict[str, Any]:
    """Candidate and production on the feedback stage's held-out day (metrics.json "newest_traffic"):
    {"status": "scored" | "skipped", "reason", "day", "queries", "candidate", "production"}."""
    gate = resolve_gate_config(ctx.params)
    system = gate.candidate_system
    if not gate.newest_traffic.enabled:
        return {"status": "skipped", "reason": "off (gate.newest_traffic.enabled is false)"}
    day, why = read_heldout(ctx.stage_dir("feedback"))
    if day is None:
        return {"status": "skipped", "reason": why}
    bundle = ctx.stage_dir("index") / BUNDLE
    if not (bundle / "manifest.json").is_file():
        return {"status": "skipped", "reason": "no candidate bundle (the index stage has not run)"}
    if system not in EVAL_MODES:
        return {"status": "skipped", "reason": f"the candidate system {system!r} is not a bundle retrieval mode"}
    run = traffic.bundle_run(ctx, bundle, system, day.queries)
    per_query = traffic.score_run(day, run)
    traffic.write_scores(out, system, per_query, run)
    production = _production_traffic(ctx, out, day, bundle)
    section = {"status": "scored", "reason": "", "day": day.day, "queries": len(day.queries),
               "metrics": [*traffic.METRICS, traffic.JUDGED],
               "candidate": {"system": system, "scores": traffic.summary(per_query)}, "production": production}
    log.info("newest traffic (%s, %d queries): candidate %s %s; production: %s", day.day, len(day.queries), system,
             section["candidate"]["scores"], production.get("scores") or production["reason"])
    return section


def run(ctx: StageContext) -> dict[str, Any]:
    """Score every system of every registered run source on data.eval_datasets; see module doc."""
    data_cfg = ctx.params.section("data")
    cfg = ctx.params.section(STAGE)
    unknown = sorted(set(cfg.sources or []) - set(RUN_SOURCES))
    if unknown:
        raise ConfigError(f"evaluate.sources: unknown source(s) {unknown}; registered: {sorted(RUN_SOURCES)}")
    sources: list[RunSource] = [load_source(name) for name in RUN_SOURCES if cfg.sources is None or name in cfg.sources]
    qrels = {name: ctx.dataset(name).qrels(data_cfg.eval_split) for name in data_cfg.eval_datasets}

    inputs = {"validated_data": ctx.stage_dir("validate") / VALIDATED_DATA}
    for src in sources:
        inputs.update(src.inputs(ctx))
    expected = _expected_paths(ctx, cfg.expected_scores)
    sliced = data_cfg.slice.max_queries is not None or data_cfg.slice.max_docs is not None
    missing = [str(p) for p in expected if not p.is_file()]
    if missing and not sliced:  # the check will run: fail before minutes of encoding, not after
        raise FileNotFoundError(f"evaluate.expected_scores: file(s) not found: {', '.join(missing)}")
    inputs.update({f"expected:{p.name}": p for p in expected if p.is_file()})
    if ctx.stage_dir("feedback").is_dir():  # the held-out day the newest traffic is scored on
        inputs["feedback"] = ctx.stage_dir("feedback")
    if "bundle" in inputs:  # its checksums (when it has them), before minutes of work
        verified_bundle(inputs["bundle"], None, "not evaluated")
    with stage_output(ctx, STAGE, sections=["data", STAGE], inputs=inputs) as (out, manifest):
        try:
            runs, source_report = collect_runs(ctx, sources)
            scores = score_systems(qrels, runs, cfg.metrics, cfg.ignore_identical_ids, data_cfg.train_dataset)
        except ValueError as exc:  # a source clash or a system missing a dataset: a broken upstream
            raise StageFailed(f"evaluate: {exc}") from exc
        scores.doc[OVERLAP_KEY] = overlap_sections(ctx, scores.per_query)
        scores.doc[traffic.NEWEST_TRAFFIC] = newest_traffic(ctx, out)
        references = check_references(ctx, scores.doc)
        table = metrics_table(scores.doc, cfg.metrics)
        _log_results(data_cfg.eval_split, table, references)
        saved = {s: runs[s] for src in sources if src.save_runs for s in source_report[src.name]["systems"]}
        write_evaluation(out, scores, table, saved, data_cfg.eval_split)
        manifest["metrics"] = {"macro": scores.doc["macro"], "zero_shot_macro": scores.doc["zero_shot_macro"],
                               traffic.NEWEST_TRAFFIC: scores.doc[traffic.NEWEST_TRAFFIC]}
        manifest["sources"] = source_report
        manifest["expected"] = references
        if references["failures"] and cfg.strict_expected:
            raise StageFailed(
                "expected scores missed (evaluate.strict_expected is true):\n" + "\n".join(references["failures"])
            )
    return {**scores.doc, "expected": references}
