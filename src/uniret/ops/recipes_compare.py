"""Compare recipes: run the training stages of each recipe and score them side by side.

Each recipe runs the same stage functions as the DAG (uniret.stages.<stage>.run) with params
`model.recipe` set to it, into artifacts/recipes/<recipe>/ (the validate and bm25 outputs are
linked from the main artifacts, so every recipe trains on the same data and negatives). Its
final model is scored by the "trained" run source (and, for a recipe served in a fused mode
whose weights the index stage learns, its bundle: `bundle_runs`); BM25 and the untrained starting models come
from the main artifacts. The recipe the main DAG trained (its final model's manifest names it) is
not trained again: its models under artifacts/<stage>/ are scored, with the DAG's stage times,
unless `retrain` is set. Writes artifacts/recipes/compare.json (the metrics.json schema of the
evaluate stage) and compare.md.
"""

from __future__ import annotations

import copy
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniret.config import Params
from uniret.config.modes import FUSION_MODES  # served fusions: scored from a bundle
from uniret.config.recipes import TRAINING_STAGES
from uniret.evaluation.sources import Runs
from uniret.runtime import StageContext
from uniret.stages import run_stage

log = logging.getLogger("uniret.evaluation")

RECIPES_DIR = "recipes"
SHARED_STAGES = ("validate", "bm25")  # read by every recipe, produced once
COMPARE_JSON = "compare.json"
COMPARE_MD = "compare.md"
SUMMARY_METRIC, SUMMARY_SECONDARY = "ndcg@10", "recall@100"  # the summary table's cells: "nDCG@10 (R@100)"


@dataclass
class RecipeRun:
    """One recipe's context and the seconds each of its training stages took."""

    name: str
    ctx: StageContext
    seconds: dict[str, float]


def recipe_context(ctx: StageContext, recipe: str) -> StageContext:
    """A context whose active recipe is `recipe` and whose artifacts live in artifacts/recipes/<recipe>/."""
    raw = copy.deepcopy(ctx.params.raw)
    raw.setdefault("model", {})["recipe"] = recipe
    params = Params(raw=raw, profile=ctx.profile, path=ctx.params.path)
    root = ctx.artifacts / RECIPES_DIR / recipe
    root.mkdir(parents=True, exist_ok=True)
    for stage in SHARED_STAGES:
        target = ctx.require(stage)
        link = root / stage
        if not link.exists():
            os.symlink(os.path.relpath(target, root), link)
    return StageContext(params=params, data_root=ctx.data_root, artifacts=root)


def train_recipe(ctx: StageContext, recipe: str) -> RecipeRun:
    """Run every training stage for `recipe` (stages outside its plan write skip manifests)."""
    rctx = recipe_context(ctx, recipe)
    seconds = {}
    for stage in TRAINING_STAGES:
        start = time.perf_counter()
        run_stage(stage, rctx)
        seconds[stage] = round(time.perf_counter() - start, 1)
    log.info("recipe %s trained: %s", recipe, seconds)
    return RecipeRun(recipe, rctx, seconds)


def dag_recipe_run(ctx: StageContext, recipe: str) -> RecipeRun | None:
    """The main DAG's training of `recipe` (artifacts/<stage>/), if its final model came from that recipe."""
    from uniret.evaluation.model_source import final_checkpoint
    from uniret.evaluation.sources import SourceUnavailable
    from uniret.runtime import read_manifest, stage_seconds

    try:
        _, path = final_checkpoint(ctx)
    except SourceUnavailable:
        return None
    if read_manifest(path.parent).get("recipe") != recipe:
        return None
    seconds = stage_seconds(ctx, TRAINING_STAGES)
    log.info("recipe %s: scoring the main DAG's models under %s (stage seconds %s)", recipe, ctx.artifacts, seconds)
    return RecipeRun(recipe, ctx, seconds)


def bundle_runs(rctx: StageContext, recipe: str) -> Runs:
    """"<recipe>/<mode>" runs of the recipe's fused served mode (and its two-signal `hybrid`) from its
    bundle, built by the index stage when missing or made from another recipe's model; {} for a
    recipe served in a mode the trained source already scores."""
    from uniret.evaluation.bundle_source import BUNDLE, BundleSource
    from uniret.retrieval.bundle import read_bundle_manifest

    plan = rctx.params.section("training").plan(recipe)
    if plan.serve_mode not in FUSION_MODES:
        return {}
    modes = list(dict.fromkeys([plan.serve_mode, "hybrid"]))
    bundle = rctx.stage_dir("index") / BUNDLE
    try:
        built_for = (read_bundle_manifest(bundle).get("model") or {}).get("recipe")
    except FileNotFoundError:
        built_for = None
    if built_for != recipe:
        run_stage("index", rctx)
    runs = BundleSource(modes).runs(rctx)
    return {f"{recipe}/{m}": runs[m] for m in modes if m in runs}


def compare_recipes(
    ctx: StageContext, recipes: list[str], train: bool = True, zeroshot: bool = True, retrain: bool = False
) -> dict[str, Any]:
    """Train (optionally) and score `recipes` beside BM25 and the starting models; write the comparison."""
    from uniret.evaluation.model_source import TrainedModelSource, ZeroShotSource
    from uniret.evaluation.scoring import score_systems
    from uniret.evaluation.sources import Bm25Source
    from uniret.evaluation.tables import metrics_table, system_table
    from uniret.utils.files import atomic_write_json, atomic_write_text

    data = ctx.params.section("data")
    ecfg = ctx.params.section("evaluate")
    runs = Bm25Source().runs(ctx)
    if zeroshot:
        runs.update(ZeroShotSource().runs(ctx))
    timings: dict[str, dict[str, float]] = {}
    for recipe in recipes:
        result = None if retrain else dag_recipe_run(ctx, recipe)
        if result is None:
            result = train_recipe(ctx, recipe) if train else RecipeRun(recipe, recipe_context(ctx, recipe), {})
        start = time.perf_counter()
        runs.update(TrainedModelSource().runs(result.ctx))
        runs.update(bundle_runs(result.ctx, recipe))
        timings[recipe] = {**result.seconds, "evaluate": round(time.perf_counter() - start, 1)}
    qrels = {name: ctx.dataset(name).qrels(data.eval_split) for name in data.eval_datasets}
    scores = score_systems(qrels, runs, ecfg.metrics, ecfg.ignore_identical_ids, data.train_dataset)
    doc = {**scores.doc, "recipes": recipes, "seconds": timings, "profile": ctx.profile,
           "train_dataset": data.train_dataset}
    out: Path = ctx.artifacts / RECIPES_DIR
    atomic_write_json(out / COMPARE_JSON, doc)
    table = metrics_table(scores.doc, [m for m in ecfg.metrics if m in ("ndcg@10", "recall@100")] or ecfg.metrics)
    summary = system_table(doc, SUMMARY_METRIC, SUMMARY_SECONDARY)
    atomic_write_text(out / COMPARE_MD, f"# Recipes compared ({ctx.profile} profile, {data.eval_split} split)\n\n"
                                        f"{SUMMARY_METRIC} ({SUMMARY_SECONDARY}) per system and dataset:\n\n"
                                        f"{summary}\n## All figures\n\n{table}")
    log.info("recipe comparison -> %s\n%s", out / COMPARE_JSON, table)
    return doc
