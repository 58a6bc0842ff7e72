"""A published bundle's served mode scored on this run's data: what the gate compares the candidate
with when production's stored scores were measured on other data (uniret.registry.basis)."""

from __future__ import annotations

from pathlib import Path

from uniret.config.modes import EVAL_MODES
from uniret.evaluation.bundle_source import BundleSource
from uniret.evaluation.scoring import Scores, score_systems
from uniret.runtime import StageContext


def score_bundle_mode(ctx: StageContext, bundle: Path, system: str) -> Scores:
    """The metrics.json document and per-query scores of `bundle`'s retrieval mode `system` on
    data.eval_datasets, scored as the evaluate stage scores the candidate (same qrels, metrics,
    retrieval settings, BM25 runs)."""
    if system not in EVAL_MODES:
        raise ValueError(f"system {system!r} is not a bundle retrieval mode ({', '.join(EVAL_MODES)})")
    data, evaluate = ctx.params.section("data"), ctx.params.section("evaluate")
    qrels = {name: ctx.dataset(name).qrels(data.eval_split) for name in data.eval_datasets}
    runs = BundleSource([system], Path(bundle)).runs(ctx)
    return score_systems(qrels, {system: runs[system]}, evaluate.metrics, evaluate.ignore_identical_ids,
                         data.train_dataset)
