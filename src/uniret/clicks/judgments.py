"""Click-derived judgments: COEC, the click model's relevance, and the IPS click rate.

COEC (clicks over expected clicks), as OpenSearch's Search Relevance Workbench computes it from UBI
logs: the CTR of each position over all traffic, then per (query, doc) pair
rating = clicks / (impressions x CTR at the pair's best rank). Its users report judgments that come
out all zero and silent failures on empty or malformed logs; here malformed sessions never get this
far (`uniret.clicks.sessions` raises `ClickDataError` naming the record and field), and an outcome
with no judgment says why (`CoecJudgments.reason`): no impressions, or impressions but no click at
all (every rating would be 0, which is no judgment). Pairs left out are counted by reason.

The IPS click rate is the counterfactual one (Joachims et al., WSDM 2017): a pair's clicks, each
weighted by the inverse of the examination propensity at the rank it was clicked, over its query's
impressions. With it as the gain, a ranking's DCG@k is the inverse-propensity estimate of the
discounted clicks that ranking would collect from the same users; nDCG divides it by the best
ordering of the same gains. It needs propensities the clicks did not come from (the training days').
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from uniret.clicks.pbm import PbmFit
from uniret.clicks.propensity import Propensities
from uniret.clicks.sessions import Sessions

NO_IMPRESSIONS = "no impressions in the logs"
FEW_IMPRESSIONS = "shown fewer times than min_impressions"
BEST_RANK_UNCLICKED = "its best rank was never clicked in any list (CTR 0: no expected clicks)"
CLICK_UNWEIGHTED = "clicked at a rank whose propensity the logs do not identify"


@dataclass
class CoecJudgments:
    """COEC ratings per (query key, doc), with the CTR curve they rest on and what was left out."""

    ratings: dict[tuple[str, str], float]
    ctr: tuple[float, ...]  # clicks / impressions at positions 1..depth over all traffic (0 where never shown)
    impressions: tuple[int, ...]  # per position
    reason: str | None = None  # why there is no rating at all (None when there are ratings)
    left_out: dict[str, int] = field(default_factory=dict)  # pairs without a rating, per reason

    def summary(self) -> dict[str, Any]:
        return {"judgments": len(self.ratings), "reason": self.reason, "left_out": self.left_out,
                "ctr": [round(c, 6) for c in self.ctr], "impressions": list(self.impressions)}


def coec(sessions: Sessions, depth: int, min_impressions: int = 1) -> CoecJudgments:
    """COEC ratings of every (query, doc) pair shown within `depth` at least `min_impressions` times."""
    if depth < 1 or min_impressions < 1:
        raise ValueError(f"depth and min_impressions must be at least 1, got {depth}, {min_impressions}")
    counts = sessions.counts(depth)
    shown_at, clicks_at = counts.per_position()
    ctr = np.divide(clicks_at, shown_at, out=np.zeros(depth), where=shown_at > 0)
    base = {"ctr": tuple(float(c) for c in ctr), "impressions": tuple(int(n) for n in shown_at)}
    if counts.impressions == 0:
        return CoecJudgments({}, reason=NO_IMPRESSIONS, **base)
    if counts.clicks == 0:
        return CoecJudgments({}, reason=f"no clicks in {counts.impressions} impressions: every COEC rating would "
                                        "be 0, which judges nothing (check that click events reach the logs and "
                                        "join their query_id)", **base)
    n_pairs = len(counts.pairs)
    pair_shown = np.bincount(counts.pair, counts.shown, n_pairs)
    pair_clicks = np.bincount(counts.pair, counts.clicked, n_pairs)
    best = np.full(n_pairs, depth + 1)
    np.minimum.at(best, counts.pair, counts.position)
    expected = pair_shown * ctr[best - 1]
    left_out: Counter = Counter()
    ratings = {}
    for i, pair in enumerate(counts.pairs):
        if pair_shown[i] < min_impressions:
            left_out[FEW_IMPRESSIONS] += 1
        elif expected[i] <= 0:
            left_out[BEST_RANK_UNCLICKED] += 1
        else:
            ratings[pair] = float(pair_clicks[i] / expected[i])
    reason = None if ratings else f"no pair passed: {dict(left_out)}"
    return CoecJudgments(ratings, reason=reason, left_out=dict(left_out), **base)


def click_model_judgments(fit: PbmFit, min_impressions: int = 1) -> dict[tuple[str, str], float]:
    """The PBM's relevance (gamma, P(click | examined)) of every pair shown at least `min_impressions`
    times within the fit's depth."""
    if min_impressions < 1:
        raise ValueError(f"min_impressions must be at least 1, got {min_impressions}")
    return {pair: g for pair, g in fit.relevance.items() if fit.shown[pair] >= min_impressions}


@dataclass
class IpsJudgments:
    """IPS click rates per (query key, doc), and what was left out (no rating at all: `reason`)."""

    ratings: dict[tuple[str, str], float]
    reason: str | None = None
    left_out: dict[str, int] = field(default_factory=dict)  # pairs without a rating, per reason

    def summary(self) -> dict[str, Any]:
        return {"judgments": len(self.ratings), "reason": self.reason, "left_out": self.left_out}


def ips_judgments(sessions: Sessions, propensities: Propensities | None, depth: int, clip: float) -> IpsJudgments:
    """The IPS click rate of every (query, doc) pair shown within `depth`: sum over its clicks of
    min(p_1 / p_rank, clip), over the number of impressions of its query. A pair shown and never
    clicked rates 0 (judged); a pair clicked at a rank `propensities` cannot weight is left out (unjudged),
    never weighted by a guess."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    if propensities is None:
        return IpsJudgments({}, reason="no propensities from the training days: no click can be weighted")
    counts = sessions.counts(depth)
    if counts.clicks == 0:
        return IpsJudgments({}, reason=f"no clicks in {counts.impressions} impressions: no IPS click rate")
    weight = np.array([propensities.weight(p, clip) if propensities.usable(p) else np.nan for p in range(1, depth + 1)])
    row_weight = weight[counts.position - 1]
    n_pairs = len(counts.pairs)
    unweighted = np.bincount(counts.pair, (counts.clicked > 0) & np.isnan(row_weight), n_pairs) > 0
    weighted = np.bincount(counts.pair, np.where(counts.clicked > 0, counts.clicked * row_weight, 0.0), n_pairs)
    per_query = Counter(imp.query_key for imp in sessions)
    ratings = {pair: float(weighted[i] / per_query[pair[0]])
               for i, pair in enumerate(counts.pairs) if not unweighted[i]}
    left_out = {CLICK_UNWEIGHTED: int(unweighted.sum())} if unweighted.any() else {}
    return IpsJudgments(ratings, reason=None if ratings else f"no pair passed: {left_out}", left_out=left_out)
