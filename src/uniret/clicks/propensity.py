"""Examination propensities as the estimators report them, and what identifies them.

Propensities are reported relative to rank 1 (rank 1 = 1.0). Why relative: IPS weights need only
ratios (a click at rank k counts 1 / (p_k / p_1)); intervention harvesting identifies only ratios;
and the position-based model's absolute scale is not identified by clicks at all (theta x c with
relevance / c fits every log equally), so EM's theta at rank 1 reflects its starting point. Absolute
values, where wanted, are `absolute(anchor)` with an anchor the caller trusts (e.g. the simulator's
rank-1 examination, or the PBM fit's theta[1] with that caveat).

What identifies p_k / p_1 from logs: some (query, doc) pair shown at rank k and at another rank, by
different rankers or by a randomised swap, and clicked at least once; chains of such pairs link
ranks. A rank outside rank 1's connected component of that graph is not identified: with one ranker
showing one ordering per query, no rank is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from uniret.clicks.sessions import PairCounts


def overlap_support(counts: PairCounts) -> np.ndarray:
    """(depth x depth) matrix: how many (query, doc) pairs were shown at both ranks k and k' and clicked
    at least once (entry [k-1, k'-1]; the diagonal is 0)."""
    depth = counts.depth
    support = np.zeros((depth, depth), dtype=np.int64)
    if not len(counts.pair):
        return support
    clicked_pairs = np.bincount(counts.pair, counts.clicked, len(counts.pairs)) > 0
    keep = clicked_pairs[counts.pair]
    pair, pos = counts.pair[keep], counts.position[keep] - 1
    # rows are sorted by pair: a membership matrix (pairs x depth) gives every co-occurrence at once
    if not len(pair):
        return support
    _, local = np.unique(pair, return_inverse=True)
    member = np.zeros((local.max() + 1, depth), dtype=np.int64)
    member[local, pos] = 1
    support = member.T @ member
    np.fill_diagonal(support, 0)
    return support


def connected_to_first(support: np.ndarray) -> np.ndarray:
    """Ranks (bool per rank 1..depth) linked to rank 1 through pairs of ranks with support > 0."""
    depth = support.shape[0]
    seen = np.zeros(depth, dtype=bool)
    if depth == 0:
        return seen
    seen[0] = True
    frontier = [0]
    while frontier:
        k = frontier.pop()
        for other in np.flatnonzero((support[k] > 0) & ~seen):
            seen[other] = True
            frontier.append(int(other))
    return seen


@dataclass(frozen=True)
class Convergence:
    """How an estimator's fit ended, and what supported it."""

    method: str
    iterations: int
    converged: bool
    last_change: float  # EM: largest move of a parameter in the last iteration; harvesting: largest gradient entry
    log_likelihood: float
    identified: tuple[bool, ...]  # per rank 1..depth: linked to rank 1 by overlapping, clicked pairs
    support: tuple[tuple[int, ...], ...]  # overlap_support: pairs shown (and clicked) at both ranks
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "iterations": self.iterations, "converged": self.converged,
                "last_change": self.last_change, "log_likelihood": self.log_likelihood,
                "identified": list(self.identified), "support": [list(r) for r in self.support],
                "notes": list(self.notes)}


@dataclass(frozen=True)
class Propensities:
    """Examination propensities at ranks 1..depth relative to rank 1, with which ranks the logs identify."""

    relative: tuple[float, ...]  # index 0 is rank 1 (= 1.0); NaN where the estimator has no value
    identified: tuple[bool, ...]
    method: str
    convergence: Convergence | None = field(default=None, compare=False)

    @property
    def depth(self) -> int:
        return len(self.relative)

    def at(self, rank: int) -> float:
        """p_rank / p_1 (1-based rank within 1..depth)."""
        if not 1 <= rank <= self.depth:
            raise ValueError(f"rank {rank} outside the estimated ranks 1..{self.depth}")
        return self.relative[rank - 1]

    def usable(self, rank: int) -> bool:
        """Whether an IPS weight can be taken at `rank`: within depth, identified, finite and positive."""
        if not 1 <= rank <= self.depth:
            return False
        value = self.relative[rank - 1]
        return self.identified[rank - 1] and math.isfinite(value) and value > 0

    def weight(self, rank: int, clip: float) -> float:
        """The IPS weight of a click at `rank`: min(p_1 / p_rank, clip)."""
        if clip < 1.0:
            raise ValueError(f"clip must be at least 1 (an IPS weight never goes below 1), got {clip}")
        if not self.usable(rank):
            raise ValueError(f"no usable propensity at rank {rank} ({self.method}; identified ranks: "
                             f"{[r for r in range(1, self.depth + 1) if self.usable(r)]})")
        return min(1.0 / self.relative[rank - 1], clip)

    def absolute(self, anchor: float) -> np.ndarray:
        """Propensities with rank 1 set to `anchor` (e.g. the simulator's examination at rank 1)."""
        return np.asarray(self.relative) * anchor

    def errors(self, truth: np.ndarray) -> np.ndarray:
        """|estimate - truth| per rank, `truth` relative to rank 1 (NaN where not estimated)."""
        truth = np.asarray(truth, dtype=float)[: self.depth]
        return np.abs(np.asarray(self.relative) - truth)

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "normalised_to": "rank 1",
                "relative": [None if not math.isfinite(v) else round(v, 6) for v in self.relative],
                "identified": list(self.identified),
                "convergence": self.convergence.to_json() if self.convergence else None}
