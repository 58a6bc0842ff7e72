"""Frozen teachers of the training stages: the cross-encoder reranker and LED's lexical teacher."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from uniret.config.models import RecipeConfig
from uniret.runtime import StageContext, read_manifest
from uniret.stages.recipe_stage import MODEL_DIR, model_dir

log = logging.getLogger("uniret.stages")


@dataclass
class LoadedTeacher:
    """A frozen encoder with the tokenizer and (query, doc) max lengths its inputs need."""

    model: torch.nn.Module
    tokenizer: object
    lengths: tuple[int, int]
    source: str
    inner: torch.nn.Module  # the unwrapped encoder (carries model_config, for cache keys)
    checkpoint: Path | None = None  # its checkpoint folder, when it came from one


def lexical_teacher_model(ctx: StageContext, recipe: RecipeConfig) -> LoadedTeacher:
    """LED's lexical teacher: the sparse channel of `teacher_from_stage`'s model (a path under the
    artifacts root, e.g. "warmup" or "recipes/unifier/continual"), else a fresh `teacher` model
    (e.g. zero-shot SPLADE-tiny). Frozen and in eval mode."""
    from uniret.models.encode import default_device
    from uniret.models.factory import build_model, load_model
    from uniret.models.led import LexicalTeacher

    if recipe.teacher_from_stage:
        path = ctx.artifacts / recipe.teacher_from_stage / MODEL_DIR
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: teacher_from_stage {recipe.teacher_from_stage!r} left no model")
        inner, tokenizer = load_model(path)
        source, checkpoint = str(path), path
    elif recipe.teacher is not None:
        inner = build_model(recipe.teacher)
        tokenizer = inner.tokenizer
        source, checkpoint = f"{recipe.teacher.arch}:{recipe.teacher.backbone}", None
    else:
        raise ValueError("this recipe's objective needs a lexical teacher: set teacher in recipes/<recipe>.yaml "
                         "or teacher_from_stage")
    cfg = inner.model_config
    teacher = LexicalTeacher(inner).eval().to(default_device())
    log.info("lexical teacher: %s", source)
    return LoadedTeacher(teacher, tokenizer, (cfg.query_max_length, cfg.doc_max_length), source, inner, checkpoint)


def reranker_model(ctx: StageContext) -> torch.nn.Module:
    """The cross-encoder trained by the reranker stage, frozen, in eval mode."""
    from uniret.models.encode import default_device
    from uniret.models.factory import load_model

    model, _ = load_model(model_dir(ctx, "reranker"), device=default_device())
    for p in model.parameters():
        p.requires_grad_(False)
    return model.eval()


def reranker_path(ctx: StageContext) -> Path:
    return ctx.stage_dir("reranker") / MODEL_DIR


RERANKER_TAUGHT = ("distill_kl", "margin_mse")  # losses whose teacher defaults to the reranker


def usable_teacher_terms(ctx: StageContext, terms: dict, min_top1: float | None) -> tuple[dict, str | None]:
    """`terms` without the reranker-taught ones when the reranker is too weak to teach, and why.

    The reranker stage records the top-1 accuracy of its final training window in its manifest;
    below `min_top1` (training.<stage>.min_teacher_top1) its terms are dropped with a warning.
    """
    taught = sorted(n for n, t in terms.items() if t.loss in RERANKER_TAUGHT and (t.teacher or "reranker") == "reranker")
    if min_top1 is None or not taught:
        return terms, None
    top1 = (read_manifest(ctx.require("reranker")).get("metrics") or {}).get("top1_accuracy")
    if top1 is not None and top1 >= min_top1:
        return terms, None
    note = (f"reranker top-1 accuracy {top1} is below min_teacher_top1 {min_top1}: "
            f"teacher terms {taught} dropped")
    log.warning(note)
    return {n: t for n, t in terms.items() if n not in taught}, note
