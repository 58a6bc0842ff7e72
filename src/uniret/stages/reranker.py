"""Stage reranker: the cross-encoder teacher, trained on the mined negatives.

No trained cross-encoder ships offline (STACK.md), so the teacher starts from the MiniLM weights
(params `model.reranker`) and learns a listwise softmax cross-entropy over each query's group:
its positive against mined hard negatives. Its scores teach the distill stage. Writes
artifacts/reranker/{model/, metrics/train.tsv, manifest.json}.
"""

from __future__ import annotations

import logging
from typing import Any

from uniret.runtime import StageContext
from uniret.stages.recipe_stage import (
    active_recipe,
    corpus_texts,
    negatives_file,
    read_records,
    train_and_save,
    write_skipped,
)

log = logging.getLogger("uniret.stages")

STAGE = "reranker"


def run(ctx: StageContext) -> dict[str, Any]:
    """Train the cross-encoder (see module doc); returns the manifest metrics."""
    import torch

    from uniret.models.factory import build_model
    from uniret.training.batches import batches_for
    from uniret.training.examples import PairCollator, build_examples
    from uniret.training.objectives import listwise_ce_loss

    recipe = active_recipe(ctx)
    if not recipe.runs(STAGE):
        return write_skipped(ctx, STAGE, recipe.name)
    cfg = recipe.stage_config("reranker")
    torch.manual_seed(cfg.train.seed)
    model = build_model(ctx.params.section("model").reranker).train()
    negatives = negatives_file(ctx, "mine")
    corpus = corpus_texts(ctx)
    examples = build_examples(read_records(negatives), cfg.group_size, list(corpus), cfg.train.seed, cfg.max_queries)
    log.info("reranker: %d examples of %d pairs", len(examples), cfg.group_size)
    data = batches_for(examples, PairCollator(model, corpus), cfg.train)
    extra = {"examples": len(examples)}
    return train_and_save(ctx, STAGE, model, data, listwise_ce_loss, cfg, recipe.name, {"negatives": negatives}, extra)
