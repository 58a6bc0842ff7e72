"""What the training stages (warmup, mine, reranker, continual, distill) share.

- the active recipe: its model/teacher (params `model`), its plan (recipes/<name>.yaml, placed under `training.recipes` by the loader) and
  its per-stage objectives (params `losses`);
- the skip manifest of a stage the recipe does not run (the DAG keeps its shape);
- `train_and_save`: the generic loop into a resumable work folder, then the final model
  (models.factory.save_model) and metrics/train.tsv into artifacts/<stage>/ with a manifest that
  records the final loss and mean active terms.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniret.config.models import RecipeConfig
from uniret.config.recipes import RecipePlan, StageTrainingConfig, TrainingSection, with_train_override
from uniret.data.negatives import NegativesRecord, iter_negatives
from uniret.runtime import StageContext, stage_output

log = logging.getLogger("uniret.stages")

MODEL_DIR = "model"  # artifacts/<stage>/model: a models.factory checkpoint folder
NEGATIVES = "negatives.jsonl"
WORK_DIR = ".train"  # artifacts/.train/<stage>: checkpoints of an unfinished run (resume)
SECTIONS = ["data", "model", "losses", "training"]
MANIFEST_TERMS = ("loss", "total", "active_terms_q", "active_terms_d", "top1_accuracy")


@dataclass
class ActiveRecipe:
    """The active recipe's name, networks, plan and the training section."""

    name: str
    model: RecipeConfig
    plan: RecipePlan
    training: TrainingSection

    def runs(self, stage: str) -> bool:
        return stage in self.plan.stages

    def stage_config(self, stage: str) -> StageTrainingConfig:
        """training.<stage> with this recipe's overrides applied: its `train` block (plan.train) and
        its training document length (plan.train_doc_length)."""
        cfg: StageTrainingConfig = getattr(self.training, stage)
        cfg = with_train_override(cfg, self.plan.train.get(stage) or {}, f"training.recipes.{self.name}.train.{stage}")
        if stage in self.plan.train_doc_length:
            cfg = dataclasses.replace(cfg, doc_max_length=self.plan.train_doc_length[stage])
        return cfg


def active_recipe(ctx: StageContext) -> ActiveRecipe:
    """The recipe named by params `model.recipe`, with its plan from `training.recipes`."""
    models = ctx.params.section("model")
    training: TrainingSection = ctx.params.section("training")
    return ActiveRecipe(models.recipe, models.active(), training.plan(models.recipe), training)


def write_skipped(ctx: StageContext, stage: str, recipe: str) -> dict[str, Any]:
    """A stage the recipe does not run: an output folder holding only a manifest saying so."""
    reason = f"skipped by recipe {recipe}"
    with stage_output(ctx, stage, sections=["model", "training"]) as (_, manifest):
        manifest.update(skipped=True, reason=reason, recipe=recipe)
    log.info("stage %s: %s", stage, reason)
    return {"skipped": True, "reason": reason}


def model_dir(ctx: StageContext, stage: str) -> Path:
    """artifacts/<stage>/model; a clear error when the stage left no model."""
    path = ctx.require(stage) / MODEL_DIR
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: stage {stage!r} wrote no model (skipped by its recipe?)")
    return path


def latest_model_dir(ctx: StageContext, stages: tuple[str, ...]) -> tuple[str, Path]:
    """(stage, model dir) of the first of `stages` that left a model."""
    for stage in stages:
        path = ctx.stage_dir(stage) / MODEL_DIR
        if path.is_dir():
            return stage, path
    raise FileNotFoundError(f"none of the stages {list(stages)} left a model under {ctx.artifacts}")


def negatives_file(ctx: StageContext, source: str) -> Path:
    """negatives.jsonl of the bm25 or mine stage."""
    path = ctx.require(source) / NEGATIVES
    if not path.is_file():
        raise FileNotFoundError(f"{path}: stage {source!r} wrote no negatives")
    return path


def read_records(path: Path) -> list[NegativesRecord]:
    """All records of a negatives file (errors name file, line and field)."""
    return list(iter_negatives(path))


def corpus_texts(ctx: StageContext) -> dict[str, str]:
    """{doc id: title + text} of the training dataset's validated corpus."""
    data = ctx.params.section("data")
    return {d.id: d.contents for d in ctx.dataset(data.train_dataset).iter_corpus()}


def summarize_logs(logs: dict[str, float]) -> dict[str, float]:
    """The manifest's training figures: final loss (window mean), sparsity, accuracy."""
    out = {f"final_{k}" if k in ("loss", "total") else k: round(v, 6) for k, v in logs.items() if k in MANIFEST_TERMS}
    return out


def train_and_save(
    ctx: StageContext,
    stage: str,
    model,
    data,
    compute_loss,
    cfg: StageTrainingConfig,
    recipe: str,
    inputs: dict[str, Path],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train with the generic loop, then write artifacts/<stage>/{model/, metrics/, manifest.json}.

    Under torchrun every rank trains; rank 0 alone writes the outputs (the others return {}).
    """
    from uniret.models.factory import save_model
    from uniret.training import train
    from uniret.training.distributed import barrier, current

    work = ctx.artifacts / WORK_DIR / stage
    result = train(model, data, compute_loss, cfg.train, work, resume=cfg.resume,
                   distributed=ctx.params.section("distributed"))
    if not current().is_main:
        barrier()  # wait for rank 0's outputs, so the job ends with them in place
        return {}
    with stage_output(ctx, stage, sections=SECTIONS, inputs=inputs) as (out, manifest):
        save_model(model, out / MODEL_DIR)
        shutil.copytree(work / "metrics", out / "metrics")
        summary = json.loads(result.summary.read_text(encoding="utf-8"))
        # `device` names the precision too: amp "native" resolves per machine (e.g. "cpu (amp: bfloat16)")
        metrics = {"steps": result.step, "train_seconds": summary.get("wall_seconds"), "device": summary.get("device"),
                   **summarize_logs(result.logs), **(extra or {})}
        manifest.update(recipe=recipe, skipped=False, metrics=metrics)
    shutil.rmtree(work, ignore_errors=True)  # checkpoints hold optimizer state: large, and done with
    log.info("stage %s (%s): %s", stage, recipe, metrics)
    barrier()
    return metrics
