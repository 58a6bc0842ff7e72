"""evaluate stage: BEIR-style metrics of BM25 and every retrieval mode on the eval datasets.

Reads the validated eval datasets (their `data.eval_split` qrels) and the runs of every
registered run source (uniret.evaluation.sources), then writes under artifacts/evaluate/:
  metrics.json   {"datasets": {dataset: {system: {metric: v}}}, "macro": {system: {...}},
                  "zero_shot_macro": {system: {...}}, "num_queries": {dataset: n},
                  "overlap": {train dataset: its seen / novel test queries' scores}}  (DVC metrics)
  metrics.md     the same as a markdown table
  per_query/<system>/<dataset>.json   {query: {metric: v}}
  runs/<system>/<dataset>.trec        for sources whose runs are not kept upstream
The manifest records which sources ran and the expected-score check (expected).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from uniret.config import ConfigError
from uniret.core.errors import StageFailed
from uniret.evaluation.expected import compare, load_expected, not_applicable
from uniret.evaluation.outputs import write_evaluation
from uniret.evaluation.overlap_scores import OVERLAP_KEY, dataset_split, overlap_section
from uniret.evaluation.scoring import score_systems
from uniret.evaluation.sources import RUN_SOURCES, RunSource, collect_runs, load_source
from uniret.evaluation.tables import metrics_table
from uniret.registry.integrity import verified_bundle
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
    if "bundle" in inputs:  # its checksums (when it has them), before minutes of work
        verified_bundle(inputs["bundle"], None, "not evaluated")
    with stage_output(ctx, STAGE, sections=["data", STAGE], inputs=inputs) as (out, manifest):
        try:
            runs, source_report = collect_runs(ctx, sources)
            scores = score_systems(qrels, runs, cfg.metrics, cfg.ignore_identical_ids, data_cfg.train_dataset)
        except ValueError as exc:  # a source clash or a system missing a dataset: a broken upstream
            raise StageFailed(f"evaluate: {exc}") from exc
        scores.doc[OVERLAP_KEY] = overlap_sections(ctx, scores.per_query)
        references = check_references(ctx, scores.doc)
        table = metrics_table(scores.doc, cfg.metrics)
        _log_results(data_cfg.eval_split, table, references)
        saved = {s: runs[s] for src in sources if src.save_runs for s in source_report[src.name]["systems"]}
        write_evaluation(out, scores, table, saved, data_cfg.eval_split)
        manifest["metrics"] = {"macro": scores.doc["macro"], "zero_shot_macro": scores.doc["zero_shot_macro"]}
        manifest["sources"] = source_report
        manifest["expected"] = references
        if references["failures"] and cfg.strict_expected:
            raise StageFailed(
                "expected scores missed (evaluate.strict_expected is true):\n" + "\n".join(references["failures"])
            )
    return {**scores.doc, "expected": references}
