"""One bi-encoder training stage (warmup, continual, distill), driven by the active recipe.

The three stages differ only in where they start (a fresh model or an earlier stage's checkpoint),
which negatives they read (BM25's or the mine stage's) and their objective
(`losses.<stage>` of recipes/<recipe>.yaml); the teachers the objective needs (reranker, lexical, BM25
scores) are loaded from what the terms ask for.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from uniret.core.errors import ConfigError
from uniret.core.runs import read_run
from uniret.registry.checkpoints import PRODUCTION, production_checkpoint
from uniret.registry.configured import registry_root
from uniret.runtime import StageContext
from uniret.stages.recipe_stage import (
    active_recipe,
    corpus_texts,
    latest_model_dir,
    negatives_file,
    read_records,
    train_and_save,
    write_skipped,
)
from uniret.stages.training_clicks import click_training_examples

log = logging.getLogger("uniret.stages")

BM25_TRAIN_RUN = "train_run.trec"  # artifacts/bm25/: BM25 top-N of the training queries


def run_biencoder_stage(
    ctx: StageContext, stage: str, start_from: tuple[str, ...], negatives_from: str
) -> dict[str, Any]:
    """Train the active recipe's model for `stage`; see the module doc.

    start_from: earlier stages whose model to continue from (first found); () builds a fresh one.
    negatives_from: "bm25" or "mine".
    """
    import torch

    from uniret.losses.compose import build_composite, needs
    from uniret.models.factory import build_model, load_model
    from uniret.stages.teachers import (
        lexical_teacher_model,
        reranker_model,
        reranker_path,
        usable_teacher_terms,
    )
    from uniret.training.batches import batches_for
    from uniret.training.examples import GroupCollator, build_examples
    from uniret.training.objectives import lexical_teacher, make_compute_loss, reranker_teacher

    recipe = active_recipe(ctx)
    if not recipe.runs(stage):
        return write_skipped(ctx, stage, recipe.name)
    cfg = recipe.stage_config(stage)
    terms, teacher_note = usable_teacher_terms(ctx, ctx.params.section("losses").terms(recipe.name, stage),
                                               cfg.min_teacher_top1)
    torch.manual_seed(cfg.train.seed)
    inputs = {}
    start, warm_start = start_model(ctx, stage, cfg.start_model)
    if start is not None:
        model, _ = load_model(start)
        inputs["start_model"] = start
    elif start_from:
        source, path = latest_model_dir(ctx, start_from)
        model, _ = load_model(path)
        inputs["start_model"] = path
        log.info("%s: continuing from the %s model %s", stage, source, path)
    else:
        model = build_model(recipe.model.model)
    model.train()
    mcfg = model.model_config

    corpus = corpus_texts(ctx)
    corpus_ids = list(corpus)
    examples = []
    if cfg.clicks.labels or cfg.clicks.source == "none":
        negatives = negatives_file(ctx, negatives_from)
        inputs["negatives"] = negatives
        examples = build_examples(read_records(negatives), cfg.group_size, corpus_ids, cfg.train.seed, cfg.max_queries)
    clicked, clicks_summary = click_training_examples(ctx, stage, cfg, corpus_ids, len(examples))
    examples += clicked
    if clicked:
        inputs["feedback"] = ctx.stage_dir("feedback")
    wanted = needs(terms)
    if clicked and "bm25" in wanted:
        raise ConfigError(f"training.{stage}.clicks: the {recipe.name} recipe's {stage} terms read BM25 scores of "
                         "the training queries' runs, which logged query texts have none; set clicks.source: none")
    teachers, collate_extra = {}, {}
    if "reranker" in wanted:
        teachers["reranker"] = reranker_teacher(reranker_model(ctx), cfg.train.batch_size * cfg.group_size)
        inputs["reranker"] = reranker_path(ctx)
    if "lexical" in wanted:
        teacher = lexical_teacher_model(ctx, recipe.model)
        teachers["lexical"] = lexical_teacher(teacher.model)
        collate_extra.update(teacher_tokenizer=teacher.tokenizer, teacher_lengths=teacher.lengths)
    if "bm25" in wanted:
        run_path = ctx.require("bm25") / BM25_TRAIN_RUN
        collate_extra["bm25_run"] = read_run(run_path)
        inputs["bm25_run"] = run_path
    collate = GroupCollator(model.tokenizer, corpus, mcfg.query_max_length, cfg.doc_max_length or mcfg.doc_max_length,
                            **collate_extra)
    log.info("%s (%s): %d examples of %d docs, terms %s", stage, recipe.name, len(examples), cfg.group_size,
             ", ".join(terms))
    idf = None
    if "idf" in wanted:  # inference-free sparse queries: IDF over the train corpus, as the index stage's table
        from uniret.data.token_stats import idf_weights

        idf = torch.from_numpy(idf_weights(model.tokenizer, list(corpus.values()),
                                           cfg.doc_max_length or mcfg.doc_max_length))
    data = batches_for(examples, collate, cfg.train)
    compute_loss = make_compute_loss(build_composite(terms), teachers, idf)
    extra = {"examples": len(examples), "negatives_from": negatives_from, "terms": sorted(terms)}
    if warm_start:
        extra["warm_start"] = warm_start
    if clicks_summary:
        extra["clicks"] = clicks_summary
    if teacher_note:
        extra["teacher_check"] = teacher_note
    return train_and_save(ctx, stage, model, data, compute_loss, cfg, recipe.name, inputs, extra)


def start_model(ctx: StageContext, stage: str, setting: str | None) -> tuple[Path | None, dict[str, Any] | None]:
    """(the checkpoint `training.<stage>.start_model` names, what the manifest records of it), or (None,
    ...) to start as the stage would without it. `production`: the checkpoint published with the
    registry's production bundle (uniret.registry.checkpoints); with none there yet (a cold start, or a
    bundle published before checkpoints were), the stage starts as without the setting and says why."""
    if not setting:
        return None, None
    if setting == PRODUCTION:
        path, version = production_checkpoint(registry_root(ctx.params))
        if path is None:
            log.warning("%s: no warm start from production (training.%s.start_model): %s; starting as without it",
                        stage, stage, version)
            return None, {"asked": PRODUCTION, "from": None, "why_not": version}
        log.info("%s: warm start from production %s (%s)", stage, version, path)
        return path, {"asked": PRODUCTION, "from": str(path), "version": version}
    path = Path(setting)
    if not path.is_dir():
        raise FileNotFoundError(f"training.{stage}.start_model: {path} is not a checkpoint folder "
                                f"(or '{PRODUCTION}': production's, from the registry)")
    log.info("%s: warm start from %s (training.%s.start_model)", stage, path, stage)
    return path, {"asked": setting, "from": str(path)}
