"""Learn the weights of a min-max score fusion on dev splits (never on a test split).

Each run is min-max normalised per query (as uniret.retrieval.fusion.interpolate does at search
time); the weights are searched on the simplex grid {w_i = k_i * step, sum w_i = 1} and the grid
point with the best metric wins (ties: the earlier grid point, which keeps the choice
deterministic). With several tuning sets (e.g. SciFact's dev carve and NFCorpus's dev split) the
objective is the mean over the sets of each set's mean over its queries, so a large set does not
drown a small one. Three runs at step 0.05 are 231 points: seconds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from uniret.core.metric_names import parse_metric
from uniret.core.runs import Run
from uniret.data.beir import Qrels
from uniret.evaluation.metrics import evaluate_run


@dataclass
class TuningSet:
    """One dev split: the runs to fuse (same order in every set) and its qrels."""

    name: str
    runs: Sequence[Run]
    qrels: Qrels


@dataclass
class FusionChoice:
    """The chosen weights, their dev score, and each single run's dev score for comparison."""

    weights: list[float]
    score: float
    single_scores: list[float]
    grid_points: int


def simplex_grid(n: int, step: float) -> list[tuple[float, ...]]:
    """Every weight vector of n non-negative multiples of `step` summing to 1."""
    units = round(1.0 / step)
    if abs(units * step - 1.0) > 1e-9:
        raise ValueError(f"grid_step {step} must divide 1")
    points = [c for c in itertools.product(range(units + 1), repeat=n) if sum(c) == units]
    return [tuple(k / units for k in c) for c in points]


def _normalised(runs: Sequence[Run], qid: str) -> tuple[list[str], np.ndarray]:
    """Candidate ids of one query (union over runs) and the [n_runs, n_cand] min-max matrix."""
    cands = sorted({d for run in runs for d in run.get(qid, {})})
    col = {d: i for i, d in enumerate(cands)}
    matrix = np.zeros((len(runs), len(cands)))
    for r, run in enumerate(runs):
        hits = run.get(qid, {})
        if not hits:
            continue
        values = np.fromiter(hits.values(), dtype=np.float64, count=len(hits))
        lo, hi = values.min(), values.max()
        norm = np.ones_like(values) if hi == lo else (values - lo) / (hi - lo)
        matrix[r, [col[d] for d in hits]] = norm
    return cands, matrix


def fused_run(per_query: dict, weights: Sequence[float], depth: int) -> Run:
    """The fusion `weights` @ matrix per query ({qid: (candidate ids, [n_runs, n_cand] normalised
    scores)}), each query's top `depth` kept (ties: candidate order)."""
    fused: Run = {}
    w = np.asarray(weights)
    for qid, (cands, matrix) in per_query.items():
        if not cands:
            continue
        total = w @ matrix
        top = np.argsort(-total, kind="stable")[:depth]
        fused[qid] = {cands[i]: float(total[i]) for i in top}
    return fused


def fused_metric(per_query: dict, qrels: Qrels, weights: Sequence[float], metric: str, depth: int,
                 ignore_identical_ids: bool) -> float:
    """Mean `metric` of `fused_run(per_query, weights, depth)` over the judged queries."""
    return evaluate_run(qrels, fused_run(per_query, weights, depth), [metric], ignore_identical_ids)[1][metric]


def learn_fusion_weights(sets: Sequence[TuningSet], step: float, metric: str = "ndcg@10",
                         ignore_identical_ids: bool = True) -> FusionChoice:
    """The grid weights maximising the mean over `sets` of the fused run's mean `metric`."""
    if not sets or any(not s.qrels for s in sets):
        raise ValueError("learn_fusion_weights: every tuning set needs dev qrels")
    n_runs = len(sets[0].runs)
    if any(len(s.runs) != n_runs for s in sets):
        raise ValueError("learn_fusion_weights: every tuning set must fuse the same runs")
    parse_metric(metric)  # a clear error for an unknown metric name
    depth = int(metric.split("@", 1)[1]) if "@" in metric else 1000  # ndcg@10 reads only the top 10
    prepared = [({qid: _normalised(s.runs, qid) for qid in s.qrels}, s.qrels) for s in sets]

    def score(weights: Sequence[float]) -> float:
        return float(np.mean([fused_metric(pq, qrels, weights, metric, depth, ignore_identical_ids)
                              for pq, qrels in prepared]))

    grid = simplex_grid(n_runs, step)
    scores = [score(w) for w in grid]
    best = int(np.argmax(scores))
    singles = [score(tuple(float(i == j) for j in range(n_runs))) for i in range(n_runs)]
    return FusionChoice([round(w, 6) for w in grid[best]], scores[best], singles, len(grid))
