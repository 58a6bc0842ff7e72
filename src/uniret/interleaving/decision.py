"""The canary's statistic and its rule.

The preference is Chapelle et al.'s (TOIS 2012) per-impression one: over impressions with at least
one click, delta = (candidate wins - production wins) / impressions, in [-1, 1]; 0 means no
preference. Its interval is one-sided at level alpha with the variance of the per-impression scores
(+1, 0, -1): each impression is one independent draw of a query from the traffic and of its clicks,
so delta estimates the preference weighted as the traffic weighs its queries (head queries count as
often as users send them). E69 first clustered impressions by query: with a Zipf stream whose head
query is a sixth of the traffic, that answers a different question (new queries, not this traffic)
and needed several times the traffic.

Rules (params canary.rule):
  non_inferior  promote unless the candidate is significantly worse (the upper bound is below 0):
                an equal candidate passes, and is rolled back at most alpha of the time;
  superior      promote only when the candidate is significantly better (the lower bound is above 0):
                an equal candidate is rolled back, and promoted at most alpha of the time.
Either waits for `min_impressions` impressions with a click; a canary past its deadline without them
is rolled back (production keeps serving, the reason says why).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

from uniret.config.canary import RULES
from uniret.interleaving.credit import Outcome

PROMOTE, ROLLBACK, WAIT = "promote", "rollback", "wait"


def one_sided_z(alpha: float) -> float:
    """The normal quantile of a one-sided test at level alpha."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    return NormalDist().inv_cdf(1.0 - alpha)


def mean_interval(total: float, squares: float, n: int, z: float) -> tuple[float, float, float]:
    """(mean, mean - z se, mean + z se) of n independent values with this sum and sum of squares."""
    if n < 2:
        return (total / n if n else 0.0), -math.inf, math.inf
    mean = total / n
    var = max(squares / n - mean * mean, 0.0) * n / (n - 1)
    se = math.sqrt(var / n)
    return mean, mean - z * se, mean + z * se


@dataclass(frozen=True)
class Preference:
    """What the interleaved impressions say: counts, delta and its one-sided bounds."""

    impressions: int  # interleaved impressions (clicked or not)
    clicked: int  # of them with at least one click: the evidence
    wins: int  # candidate won
    ties: int
    losses: int  # production won
    queries: int  # distinct queries among the clicked impressions (for the record)
    delta: float
    lower: float  # delta - z se (one-sided at alpha)
    upper: float
    alpha: float

    def to_dict(self) -> dict[str, Any]:
        return {k: (round(v, 5) if isinstance(v, float) and math.isfinite(v) else v) for k, v in asdict(self).items()}


def preference(outcomes: Iterable[Outcome], alpha: float) -> Preference:
    """The preference of a canary's interleaved impressions."""
    z = one_sided_z(alpha)
    queries: set[str] = set()
    impressions = wins = ties = losses = 0
    for o in outcomes:
        impressions += 1
        if not o.clicked:
            continue
        s = o.score
        wins += s > 0
        losses += s < 0
        ties += s == 0
        queries.add(o.query)
    clicked = wins + ties + losses
    delta, lower, upper = mean_interval(wins - losses, wins + losses, clicked, z)
    return Preference(impressions, clicked, wins, ties, losses, len(queries), delta, lower, upper, alpha)


@dataclass(frozen=True)
class Verdict:
    """promote, rollback or wait, and why (recorded in canary.json and the registry)."""

    action: str
    reason: str
    preference: Preference

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "reason": self.reason, "preference": self.preference.to_dict()}


def decide(pref: Preference, rule: str, min_impressions: int, expired: bool) -> Verdict:
    """Apply `rule` (RULES) to the preference; `expired`: the canary's deadline has passed."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    summary = (f"delta {pref.delta:+.4f} ({pref.wins} wins, {pref.ties} ties, {pref.losses} losses over "
               f"{pref.clicked} clicked impressions of {pref.queries} queries; one-sided {1 - pref.alpha:.1%} "
               f"bounds {pref.lower:+.4f} .. {pref.upper:+.4f})")
    if pref.clicked < min_impressions:
        if not expired:
            return Verdict(WAIT, f"{pref.clicked} of {min_impressions} clicked impressions so far", pref)
        return Verdict(ROLLBACK, f"deadline passed with {pref.clicked} of {min_impressions} clicked impressions: "
                                 f"not enough evidence; {summary}", pref)
    if rule == "non_inferior":
        if pref.upper < 0:
            return Verdict(ROLLBACK, f"candidate significantly worse than production: {summary}", pref)
        return Verdict(PROMOTE, f"candidate not worse than production: {summary}", pref)
    if pref.lower > 0:
        return Verdict(PROMOTE, f"candidate significantly better than production: {summary}", pref)
    return Verdict(ROLLBACK, f"candidate not shown better than production: {summary}", pref)
