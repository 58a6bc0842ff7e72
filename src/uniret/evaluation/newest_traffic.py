"""A bundle's served mode scored on the feedback stage's held-out day: the newest traffic, per query.

The evaluate stage scores the candidate's bundle and production's with it; the gate pairs the two
per query (uniret.registry.traffic_check). Written under artifacts/evaluate/newest_traffic/ in the
evaluate stage's layout, one pseudo-dataset per judgment set:
  per_query/<system>/<judgments>.json   {query: {metric: v}}   (judgments: click_model, coec, ips)
  runs/<system>.trec                    the system's top RUN_DEPTH on the day's queries (TREC run format)
with system the candidate's served mode and "production". The held-out queries are searched on the
train dataset's corpus: click judgments name its doc ids. Metrics (uniret.evaluation.graded): nDCG@10
with unjudged documents as 0, nDCG@10 on the condensed list (unjudged documents removed), and the
share of the top 10 with a judgment; gate.newest_traffic.metric picks the one the gate pairs.

The counterfactual click metric is the same nDCG on the `ips` judgments: with the IPS click rate
(uniret.clicks.judgments, weighted by the training days' propensities) as the gain, DCG@10 is the
inverse-propensity estimate of the discounted clicks a ranking would collect from the day's users
(Joachims et al., WSDM 2017), normalised per query by the best ordering of the same gains. Clicks at a
rank no swap links to rank 1 cannot be weighted; their pairs are left unjudged (the feedback manifest
counts them): on a night without RandPair or a canary the metric covers fewer pairs, none weighted by a guess.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from uniret.core.runs import Run, write_run
from uniret.evaluation.graded import CONDENSED, graded_ndcg, judged_share, parse_ndcg_cutoff
from uniret.evaluation.heldout import HeldoutDay
from uniret.evaluation.outputs import PER_QUERY_DIR
from uniret.runtime import StageContext
from uniret.utils.files import atomic_write_json

NEWEST_TRAFFIC = "newest_traffic"  # metrics.json's key and the folder under artifacts/evaluate
PRODUCTION_SYSTEM = "production"  # production's per-query scores, beside the candidate's
METRICS = ("ndcg@10", "condensed_ndcg@10")  # what gate.newest_traffic.metric may pick
JUDGED_K = 10
JUDGED = f"judged@{JUDGED_K}"  # the share of the top 10 with a judgment: context, never gated on
RUNS_DIR = "runs"
RUN_DEPTH = 100  # what a run file keeps per query: nDCG@10 on any qrels, and most condensed lists
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
    """Per-query METRICS and JUDGED of `run` on each judgment set of the held-out day."""
    out: PerJudgments = {}
    for name, qrels in day.judgments.items():
        values = {m: graded_ndcg(qrels, run, parse_ndcg_cutoff(m), condensed=m.startswith(CONDENSED)) for m in METRICS}
        values[JUDGED] = judged_share(qrels, run, JUDGED_K)
        out[name] = {q: {m: round(v[q], DECIMALS) for m, v in values.items()} for q in values[METRICS[0]]}
    return out


def summary(per_query: PerJudgments) -> dict[str, dict[str, Any]]:
    """{judgments: {metric: mean over its judged queries, "queries": n}} (means None without a judged query)."""
    out = {}
    for name, rows in per_query.items():
        out[name] = {m: round(sum(v[m] for v in rows.values()) / len(rows), DECIMALS) if rows else None
                     for m in (*METRICS, JUDGED)}
        out[name]["queries"] = len(rows)
    return out


def write_scores(out: Path, system: str, per_query: PerJudgments, run: Run) -> None:
    """newest_traffic/per_query/<system>/<judgments>.json and runs/<system>.trec under the evaluate
    stage's output `out` (the run: what a reader needs to see why the two sides differ)."""
    for name, rows in per_query.items():
        atomic_write_json(out / NEWEST_TRAFFIC / PER_QUERY_DIR / system / f"{name}.json", rows)
    write_run(out / NEWEST_TRAFFIC / RUNS_DIR / f"{system}.trec", run, system, RUN_DEPTH)


def scores_dir(evaluated: Path) -> Path:
    """The folder holding per_query/ of the newest traffic (what compare_systems.read_per_query takes)."""
    return evaluated / NEWEST_TRAFFIC
