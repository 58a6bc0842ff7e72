"""Training examples from clicks: IPS-weighted positives for the debiased arm, clicks-as-labels for the naive arm.

Each click at position p within the depth is one positive (query, clicked doc). The debiased arm
weights it by inverse propensity, 1 / (p_p / p_1), clipped at `clip` (the clip bounds the variance
that rare deep clicks would add; Joachims et al., WSDM 2017); the naive arm weights every click 1,
as if clicks were unbiased labels. Negatives are left to the trainer (its mined or in-batch ones).
Clicks the propensities cannot weight (deeper than the estimated depth, or at a rank the logs do not
identify) are left out and counted by reason, never weighted by a guess.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from uniret.clicks.propensity import Propensities
from uniret.clicks.sessions import Sessions

DEEPER = "clicked deeper than the depth used (the propensities' depth)"


@dataclass(frozen=True)
class ClickPair:
    """One positive training example from one click."""

    query_key: str
    query: str
    doc_id: str
    position: int  # 1-based rank at which it was clicked
    weight: float  # IPS weight (debiased arm) or 1.0 (naive arm)
    ranker: str
    client_id: str = ""  # whose click (feedback forget rebuilds the pairs without a forgotten client)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class PairSet:
    pairs: list[ClickPair]
    left_out: dict[str, int] = field(default_factory=dict)  # clicks without a pair, per reason

    def summary(self) -> dict[str, Any]:
        weights = [p.weight for p in self.pairs]
        return {"pairs": len(self.pairs), "left_out": self.left_out,
                "weight_sum": round(sum(weights), 6), "weight_max": max(weights, default=0.0)}


def ips_pairs(sessions: Sessions, propensities: Propensities, clip: float) -> PairSet:
    """One positive per click within the propensities' depth, weighted min(1 / relative propensity, clip)."""
    if clip < 1.0:
        raise ValueError(f"clip must be at least 1 (an IPS weight never goes below 1), got {clip}")
    out: list[ClickPair] = []
    left_out: Counter = Counter()
    for imp in sessions:
        for p in sorted(imp.clicks):
            if p > propensities.depth:
                left_out[DEEPER] += 1
            elif not propensities.usable(p):
                left_out[f"rank {p}: propensity not identified by the logs"] += 1
            else:
                out.append(ClickPair(imp.query_key, imp.query, imp.doc_ids[p - 1], p,
                                     propensities.weight(p, clip), imp.ranker, imp.client_id))
    return PairSet(out, dict(left_out))


def naive_pairs(sessions: Sessions, depth: int) -> PairSet:
    """One positive of weight 1 per click within `depth` (clicks as labels)."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    out: list[ClickPair] = []
    left_out: Counter = Counter()
    for imp in sessions:
        for p in sorted(imp.clicks):
            if p > depth:
                left_out[DEEPER] += 1
            else:
                out.append(ClickPair(imp.query_key, imp.query, imp.doc_ids[p - 1], p, 1.0, imp.ranker, imp.client_id))
    return PairSet(out, dict(left_out))
