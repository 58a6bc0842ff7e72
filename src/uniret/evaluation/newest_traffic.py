"""A bundle's served mode scored on the feedback stage's held-out day: the newest traffic, per query.

The evaluate stage scores the candidate's bundle and production's with it; the gate pairs the two
per query (uniret.registry.traffic_check). Written under artifacts/evaluate/newest_traffic/ in the
evaluate stage's layout, one pseudo-dataset per judgment set:
  per_query/<system>/<judgments>.json   {query: {"ndcg@10": v}}   (judgments: click_model, coec)
with system the candidate's served mode and "production". The held-out queries are searched on the
train dataset's corpus: click judgments name its doc ids.

No counterfactual click metric is computed yet. The cheap one, the click model's expected clicks
(sum over ranks of examination x relevance), needs an examination propensity at every rank 1-10, and
the feedback stage leaves a rank without one when no swap links it to rank 1 (one ranker and no
RandPair: most nights), so the metric would be undefined on exactly the nights it is wanted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from uniret.core.runs import Run
from uniret.evaluation.graded import graded_ndcg, parse_ndcg_cutoff
from uniret.evaluation.heldout import HeldoutDay
from uniret.evaluation.outputs import PER_QUERY_DIR
from uniret.runtime import StageContext
from uniret.utils.files import atomic_write_json

NEWEST_TRAFFIC = "newest_traffic"  # metrics.json's key and the folder under artifacts/evaluate
PRODUCTION_SYSTEM = "production"  # production's per-query scores, beside the candidate's
METRIC = "ndcg@10"  # the one metric computed (gate.newest_traffic.metric)
DECIMALS = 6

PerJudgments = dict[str, dict[str, dict[str, float]]]  # {judgments: {query: {metric: value}}}


def bundle_run(ctx: StageContext, bundle_dir: Path, mode: str, queries: dict[str, str]) -> Run:
    """`mode` of the bundle at `bundle_dir` on `queries` ({id: text}) over data.train_dataset's corpus:
    the bundle's own index when it holds that corpus (as serving searches it), else the corpus encoded
    by its document encoder (uniret.evaluation.bundle_source.DatasetIndexes)."""
    from uniret.evaluation.bundle_source import DatasetIndexes
    from uniret.retrieval.base import encode_queries
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.modes import build_searchers

    cfg = ctx.params.section("retrieval")
    name = ctx.params.section("data").train_dataset
    bundle = open_bundle(bundle_dir, cfg)
    index = DatasetIndexes(ctx, bundle).index(name, ctx.dataset(name))
    searchers = build_searchers(index, cfg, bundle.encoder, bundle.bm25, bundle.has_gate, [mode])
    if mode not in searchers:
        raise ValueError(f"{bundle_dir}: the bundle cannot serve mode {mode!r} (modes: {sorted(searchers)})")
    return searchers[mode].search_batch(encode_queries(queries, bundle.encoder), max(cfg.k, 10))


def score_run(day: HeldoutDay, run: Run) -> PerJudgments:
    """Per-query nDCG@10 of `run` on each judgment set of the held-out day."""
    k = parse_ndcg_cutoff(METRIC)
    return {name: {q: {METRIC: round(v, DECIMALS)} for q, v in graded_ndcg(qrels, run, k).items()}
            for name, qrels in day.judgments.items()}


def summary(per_query: PerJudgments) -> dict[str, dict[str, Any]]:
    """{judgments: {metric: mean over its judged queries, "queries": n}} (mean None without a judged query)."""
    out = {}
    for name, rows in per_query.items():
        values = [v[METRIC] for v in rows.values()]
        out[name] = {METRIC: round(sum(values) / len(values), DECIMALS) if values else None, "queries": len(values)}
    return out


def write_scores(out: Path, system: str, per_query: PerJudgments) -> None:
    """newest_traffic/per_query/<system>/<judgments>.json under the evaluate stage's output `out`."""
    for name, rows in per_query.items():
        atomic_write_json(out / NEWEST_TRAFFIC / PER_QUERY_DIR / system / f"{name}.json", rows)


def scores_dir(evaluated: Path) -> Path:
    """The folder holding per_query/ of the newest traffic (what compare_systems.read_per_query takes)."""
    return evaluated / NEWEST_TRAFFIC
