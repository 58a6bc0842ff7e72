"""BEIR-style retrieval metrics on pytrec_eval (trec_eval's measures), under readable names.

Readable names are `<family>@<k>` or a bare family: "ndcg@10", "mrr@10", "recall@100",
"recall@1000", "precision@10", "map", "map@100". Each maps to one pytrec_eval measure; MRR@k has
no trec_eval cut, so each query's run is truncated to its top k before `recip_rank` is computed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytrec_eval

from uniret.core.metric_names import MetricSpec, parse_metric
from uniret.core.runs import Run
from uniret.data.beir import Qrels

PerQuery = dict[str, dict[str, float]]  # {query_id: {metric: value}}
Aggregate = dict[str, float]  # {metric: mean over judged queries}


def trec_order(scores: dict[str, float]) -> list[tuple[str, float]]:
    """Docs in trec_eval's ranking order: score descending, ties by doc id DEScending.

    trec_eval ignores the rank column and re-sorts this way, so truncating a run in any other
    order would make MRR@k disagree with the nDCG@k that trec_eval computes on the same run.
    """
    return sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def _prepare_run(run: Run, judged: Iterable[str], ignore_identical_ids: bool) -> Run:
    """Judged queries only, as float scores, without self-hits when asked (as BEIR does)."""
    out: Run = {}
    for qid in judged:
        hits = run.get(qid)
        if not hits:
            continue
        clean = {did: float(s) for did, s in hits.items() if not (ignore_identical_ids and did == qid)}
        if clean:
            out[qid] = clean
    return out


def _truncate(run: Run, k: int) -> Run:
    return {qid: dict(trec_order(hits)[:k]) for qid, hits in run.items()}


def evaluate_run(
    qrels: Qrels,
    run: Run,
    metrics: Sequence[str],
    ignore_identical_ids: bool = True,
) -> tuple[PerQuery, Aggregate]:
    """Score `run` against `qrels`; return (per-query values, means over judged queries).

    Every query in `qrels` counts, including those the run has no result for: such a query
    scores 0 on every metric (pytrec_eval alone would silently drop it from the average).
    Queries in the run but not in `qrels` are ignored. With `ignore_identical_ids`, hits whose doc
    id equals the query id are dropped first (BEIR's convention for corpora that contain the
    queries, e.g. ArguAna, Quora; note that it also drops genuine hits where id spaces merely
    collide, as cranfield query 225 / doc 225 and medline 5 / 5: BEIR's numbers include that
    too). Relevance is qrels score >= 1; nDCG uses the graded scores as linear gains
    (trec_eval's definition).
    """
    if not qrels:
        raise ValueError("no judged queries: qrels are empty")
    specs = [parse_metric(m) for m in metrics]
    if len({s.name for s in specs}) != len(specs):
        raise ValueError(f"duplicate metric in {list(metrics)}")
    judged = sorted(qrels)
    prepared = _prepare_run(run, judged, ignore_identical_ids)

    per_query: PerQuery = {qid: {s.name: 0.0 for s in specs} for qid in judged}
    by_depth: dict[int | None, list[MetricSpec]] = {}
    for spec in specs:
        by_depth.setdefault(spec.truncate, []).append(spec)
    for depth, group in by_depth.items():
        scored_run = prepared if depth is None else _truncate(prepared, depth)
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {s.measure for s in group})
        for qid, values in evaluator.evaluate(scored_run).items():
            for spec in group:
                per_query[qid][spec.name] = float(values[spec.key])

    n = len(judged)
    aggregate = {s.name: sum(per_query[q][s.name] for q in judged) / n for s in specs}
    return per_query, aggregate


def mean_over(tables: Iterable[Aggregate], metrics: Sequence[str]) -> Aggregate:
    """Unweighted mean of per-dataset aggregates (BEIR's macro average); {} when there are none."""
    tables = list(tables)
    if not tables:
        return {}
    return {m: sum(t[m] for t in tables) / len(tables) for m in metrics}
