"""Serving's clicks as a bi-encoder stage's training examples (params training.<stage>.clicks).

The feedback stage's click positives of the training days (artifacts/feedback/pairs/, IPS-weighted or
naive) become (query text, clicked doc) examples drawn in proportion to their weights, each with
random corpus negatives (uniret.training.examples.resample_examples). With labels mixed in, clicks are
`share` of all examples; clicks only (labels false), one example per step and batch row. A query text
equal to a held-out (dev or test) query of any dataset is dropped, as the static tower's fine-tuning
drops it.
"""

from __future__ import annotations

import logging
from typing import Any

from uniret.config.recipes import StageTrainingConfig
from uniret.core.errors import ConfigError
from uniret.core.stage_files import DEV_QRELS
from uniret.runtime import StageContext

log = logging.getLogger("uniret.stages")

CLICK_STAGE = "continual"  # the one training stage whose DVC stage depends on artifacts/feedback


def click_example_count(cfg: StageTrainingConfig, n_labelled: int) -> int:
    """How many click examples to draw: share / (1 - share) per labelled example, or one per step and
    batch row when the stage trains on clicks alone."""
    mix = cfg.clicks
    if not mix.labels:
        return cfg.train.max_steps * cfg.train.batch_size * cfg.train.grad_accum
    return round(mix.share / (1.0 - mix.share) * n_labelled)


def _held_out_texts(ctx: StageContext) -> set[str]:
    from uniret.data.beir import read_qrels
    from uniret.data.pseudo_queries import held_out_queries

    data = ctx.params.section("data")
    dev_path = ctx.stage_dir("bm25") / DEV_QRELS
    dev_qids = set(read_qrels(dev_path)) if dev_path.is_file() else set()
    names = dict.fromkeys([data.train_dataset, *data.eval_datasets])
    return held_out_queries([ctx.dataset(n) for n in names], data.train_dataset, data.train_split, dev_qids)


def click_training_examples(ctx: StageContext, stage: str, cfg: StageTrainingConfig, corpus_ids: list[str],
                            n_labelled: int) -> tuple[list, dict[str, Any]]:
    """(examples, summary for the manifest) of `cfg.clicks`; no examples when its source is none or the
    feedback stage had no logs. Clicks only with no clicks to train on is an error naming the setting."""
    from uniret.feedback.examples import click_examples
    from uniret.stages.feedback import feedback_output
    from uniret.training.examples import resample_examples

    mix = cfg.clicks
    if mix.source == "none":
        return [], {}
    if stage != CLICK_STAGE:  # dvc.yaml gives only the continual stage artifacts/feedback as a dependency
        raise ConfigError(f"training.{stage}.clicks: only training.{CLICK_STAGE}.clicks may read clicks; set source: none")
    feedback = feedback_output(ctx)
    clicks = None
    if feedback is not None:
        clicks = click_examples(feedback, mix.source, _held_out_texts(ctx), set(corpus_ids), aggregate=mix.aggregate)
    if clicks is None or not clicks.texts:
        why = "the feedback stage had no logs" if clicks is None else f"no usable click pairs ({clicks.left_out})"
        if not mix.labels:
            raise ConfigError(f"training.{stage}.clicks: labels is false but there are no clicks to train on: {why}")
        log.warning("%s: no click examples mixed in: %s", stage, why)
        return [], {"source": mix.source, "examples": 0, "why": why}
    n = click_example_count(cfg, n_labelled)
    pairs = list(zip(clicks.texts, clicks.docs, clicks.weights, strict=True))
    examples = resample_examples(pairs, n, cfg.group_size, corpus_ids, cfg.train.seed)
    summary = {"source": mix.source, "aggregate": mix.aggregate, "labels": mix.labels, "examples": len(examples),
               "pairs": len(pairs), "queries": len(set(clicks.texts)), "left_out": clicks.left_out}
    log.info("%s: %d click examples drawn from %d %s pairs of %d query texts", stage, len(examples), len(pairs),
             mix.source, summary["queries"])
    return examples, summary
