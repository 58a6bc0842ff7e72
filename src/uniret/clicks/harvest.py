"""Intervention harvesting: relative propensities from (query, doc) pairs that different rankers showed at
different ranks (Agarwal, Zaitsev, Wang, Li, Najork and Joachims, "Estimating Position Bias without
Intrusive Interventions", WSDM 2019), with the AllPairs estimator.

When logs of several rankers (successive bundles, canary arms, or RandPair's swaps) show pair
(q, d) at rank k and at rank k', the two ranks saw the same document for the same query: a swap
intervention found in the logs. For every ordered pair of ranks (k, k') the harvest sums, over the
pairs shown at both, the click-through rate at k (c^k_{k,k'}) and a count of pairs (n_{k,k'});
under the position-based model E[c^k_{k,k'}] = p_k r_{k,k'} n_{k,k'}, with r_{k,k'} = r_{k',k} the
mean relevance of that set. AllPairs maximises
    sum over k != k' of c^k_{k,k'} log(p_k r_{k,k'}) + (n_{k,k'} - c^k_{k,k'}) log(1 - p_k r_{k,k'})
over every p_k and r_{k,k'} jointly (scipy's L-BFGS on logits, exact gradient), so ranks that never
met directly are linked through the others. Only the ratios p_k / p_1 are identified.

Weighting within a set: `pairs` (the paper's: each pair counts once, by its CTR at each rank) or
`harmonic` (each pair counts n_k n_k' / (n_k + n_k'), the inverse variance of its CTR difference, so a
pair seen hundreds of times at both ranks outweighs one seen once; the weight is the same at both
ranks, which keeps r_{k,k'} symmetric and the estimate unbiased).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import minimize

from uniret.clicks.propensity import Convergence, Propensities, connected_to_first, overlap_support
from uniret.clicks.sessions import ClickDataError, PairCounts, Sessions

Weighting = Literal["pairs", "harmonic"]
Within = Literal["all", "ranker", "day"]
EPS = 1e-9


@dataclass(frozen=True)
class Harvest:
    """The swap interventions found in the logs: per ordered pair of ranks, summed CTR and weight."""

    clicks: np.ndarray  # (depth x depth): [k-1, k'-1] = c^k_{k,k'}, weighted CTR at k of pairs also shown at k'
    weight: np.ndarray  # (depth x depth): n_{k,k'}, the weighted number of such pairs (symmetric)


def harvest(counts: PairCounts, weighting: Weighting = "harmonic") -> Harvest:
    """Sum every pair's CTRs over the ranks it was shown at, for each ordered pair of distinct ranks."""
    if weighting not in ("pairs", "harmonic"):
        raise ValueError(f"weighting must be 'pairs' or 'harmonic', got {weighting!r}")
    depth = counts.depth
    clicks = np.zeros(depth * depth)
    weight = np.zeros(depth * depth)
    if len(counts.pair):
        sizes = np.bincount(counts.pair, minlength=len(counts.pairs))
        starts = np.cumsum(sizes) - sizes
        rows = np.flatnonzero(sizes[counts.pair] > 1)  # rows of pairs shown at two ranks or more
        reps = sizes[counts.pair[rows]]
        left = np.repeat(rows, reps)
        # each left row meets every row of its own pair (rows are sorted by pair)
        offset = np.arange(len(left)) - np.repeat(np.cumsum(reps) - reps, reps)
        right = np.repeat(starts[counts.pair[rows]], reps) + offset
        keep = left != right
        left, right = left[keep], right[keep]
        n_left, n_right = counts.shown[left].astype(float), counts.shown[right].astype(float)
        w = np.ones(len(left)) if weighting == "pairs" else n_left * n_right / (n_left + n_right)
        cell = (counts.position[left] - 1) * depth + (counts.position[right] - 1)
        clicks = np.bincount(cell, w * counts.clicked[left] / n_left, depth * depth)
        weight = np.bincount(cell, w, depth * depth)
    return Harvest(clicks.reshape(depth, depth), weight.reshape(depth, depth))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def all_pairs(h: Harvest, ranks: np.ndarray, max_iterations: int = 1000,
              start: np.ndarray | None = None) -> tuple[np.ndarray, object]:
    """Maximise the AllPairs likelihood over the ranks marked in `ranks`; returns (p per rank, scipy result).
    `start`: propensities to start from (e.g. the full logs' fit, for a bootstrap round); default 0.5 each."""
    depth = h.weight.shape[0]
    k, k2 = np.nonzero((h.weight > 0) & ranks[:, None] & ranks[None, :])
    lo, hi = np.minimum(k, k2), np.maximum(k, k2)
    sets, set_of = np.unique(lo * depth + hi, return_inverse=True)  # r is shared by (k, k') and (k', k)
    c, n = h.clicks[k, k2], h.weight[k, k2]

    def loss(x: np.ndarray) -> tuple[float, np.ndarray]:
        p, r = _sigmoid(x[:depth]), _sigmoid(x[depth:])
        pi = np.clip(p[k] * r[set_of], EPS, 1 - EPS)
        value = -np.sum(c * np.log(pi) + (n - c) * np.log1p(-pi))
        g = (c - n * pi) / (1.0 - pi)
        grad_a = -np.bincount(k, g * (1.0 - p[k]), depth)
        grad_b = -np.bincount(set_of, g * (1.0 - r[set_of]), len(sets))
        return float(value), np.concatenate([grad_a, grad_b])

    x0 = np.zeros(depth + len(sets))
    if start is not None:
        x0[:depth] = np.log(np.clip(start, EPS, 1 - EPS) / np.clip(1 - start, EPS, 1))
    result = minimize(loss, x0, jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iterations, "gtol": 1e-9, "ftol": 1e-14})
    return _sigmoid(result.x[:depth]), result


def summed_harvest(groups: list[PairCounts], weighting: Weighting) -> tuple[np.ndarray, Harvest]:
    """(support, harvest) of each group's counts, summed: a move between two groups is never compared."""
    depth = groups[0].depth
    support = np.zeros((depth, depth), dtype=np.int64)
    clicks, weight = np.zeros((depth, depth)), np.zeros((depth, depth))
    for counts in groups:
        support += overlap_support(counts)
        h = harvest(counts, weighting)
        clicks, weight = clicks + h.clicks, weight + h.weight
    return support, Harvest(clicks, weight)


def harvest_propensities(sessions: Sessions | PairCounts, depth: int, weighting: Weighting = "harmonic",
                         max_iterations: int = 1000, within: Within = "all") -> Propensities:
    """Relative propensities at ranks 1..depth by intervention harvesting (AllPairs).

    Harvesting assumes where a ranker put a document does not depend on the clicks it is compared with.
    A ranker trained on the clicks of the one before it moves documents *because* of their clicks, so a
    document's CTR compared across the two is biased (the winner's curse: what moved up had lucky clicks
    below, E68). `within` (needs Sessions) says which impressions may be compared:
    - `all`: any two (the paper's setting: rankers that never learned from the logs);
    - `ranker`: two lists of the same ranker only (its RandPair swaps);
    - `day`: two lists shown on the same UTC day, whatever their rankers: each was made by a bundle trained
      on earlier closed days and by coin flips (RandPair, a canary's interleaving), never by that day's
      clicks; a canary's interleaved lists meet production's own here (E79).
    Ranks no chain of swap interventions links to rank 1 are NaN and marked not identified.
    Raises ClickDataError when the logs hold no impression or no click within depth, or (`day`) when an
    impression has no day.
    """
    if within not in ("all", "ranker", "day"):
        raise ValueError(f"within must be 'all', 'ranker' or 'day', got {within!r}")
    if within != "all" and isinstance(sessions, PairCounts):
        raise ValueError(f"within={within!r} needs the sessions (their labels), not aggregated counts")
    counts = sessions if isinstance(sessions, PairCounts) else sessions.counts(depth)
    if counts.depth != depth:
        raise ValueError(f"counts are over depth {counts.depth}, asked for {depth}")
    if counts.impressions == 0:
        raise ClickDataError("no impression within the depth: no propensity can be estimated", field="impressions")
    if counts.clicks == 0:
        raise ClickDataError(f"no click in {counts.impressions} impressions: nothing to harvest", field="clicks")
    groups = [counts] if within == "all" else [g.counts(depth) for g in sessions.groups(within).values()]
    support, h = summed_harvest(groups, weighting)
    identified = connected_to_first(support)
    notes = []
    relative = np.full(depth, np.nan)
    relative[0] = 1.0
    iterations, converged, change, loglik = 0, True, 0.0, 0.0
    if identified[1:].any():
        p, result = all_pairs(h, identified, max_iterations)
        relative[identified] = p[identified] / p[0]
        iterations, converged = int(result.nit), bool(result.success)
        change = float(np.max(np.abs(result.jac))) if result.jac is not None else float("nan")
        loglik = -float(result.fun)
        if not converged:
            notes.append(f"L-BFGS stopped: {result.message}")
    if not identified[1:].all():
        lost = [r for r in range(2, depth + 1) if not identified[r - 1]]
        notes.append(f"ranks {lost}: no chain of (query, doc) pairs shown at two ranks and clicked links them to "
                     "rank 1 (one ordering per query identifies nothing; successive rankers or RandPair swaps do)")
    convergence = Convergence(
        method=f"intervention-harvesting-allpairs-{weighting}" + ("" if within == "all" else f"-within-{within}s"),
        iterations=iterations, converged=converged,
        last_change=change, log_likelihood=loglik, identified=tuple(bool(x) for x in identified),
        support=tuple(tuple(int(v) for v in r) for r in support), notes=tuple(notes))
    return Propensities(tuple(float(v) for v in relative), tuple(bool(x) for x in identified),
                        convergence.method, convergence)
