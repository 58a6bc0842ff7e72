"""What the feedback stage derives from validated UBI records, with the click models of uniret.clicks.

Training days: impressions (one per logged answer), the examination propensities of positions
1..depth by intervention harvesting of the lists shown on the same day (feedback.harvest_within, E79:
RandPair's swaps, a canary's interleaving; moves between bundles trained on the clicks are biased, E68) in the window (EM's
estimate beside it, for comparison only: it is biased at these volumes, E63), and one positive per
click, IPS-weighted (clipped; clicks at a rank no swap identifies are left out, counted) and naive. Held-out day: COEC,
the click model's relevance and the IPS click rate (weighted by the training days' propensities) as judgments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from uniret.clicks.harvest import Within, harvest_propensities
from uniret.clicks.harvest_intervals import Intervals, propensity_intervals
from uniret.clicks.judgments import CoecJudgments, IpsJudgments, click_model_judgments, coec, ips_judgments
from uniret.clicks.pairs import PairSet, ips_pairs, naive_pairs
from uniret.clicks.pbm import PbmFit, fit_pbm
from uniret.clicks.propensity import Propensities
from uniret.clicks.sessions import ClickDataError, Sessions, query_key, sessions_from_ubi

__all__ = ["Derived", "Sessions", "derive", "query_key", "sessions"]


def sessions(queries: list[dict[str, Any]], events: list[dict[str, Any]], source: str) -> Sessions:
    """Impressions joined from validated records (events of a query outside `queries` are left out)."""
    return sessions_from_ubi(queries, events, source=source).sessions


@dataclass
class Derived:
    """Everything the stage writes, before it is written."""

    propensities: Propensities | None
    propensity_note: str
    em: PbmFit | None
    ctr: list[float | None]
    ips: PairSet
    naive: PairSet
    heldout_coec: CoecJudgments | None
    heldout_relevance: dict[tuple[str, str], float] = field(default_factory=dict)
    estimators: list[str | None] = field(default_factory=list)  # per rank: "harvest", or None (not identified)
    intervals: Intervals | None = None  # the harvest's bootstrap interval per rank (feedback.propensity_bootstrap)
    heldout_ips: IpsJudgments | None = None  # the held-out day's IPS click rates (None: no held-out day)

    def half_width_max(self) -> float | None:
        """The widest half of a propensity's 95% interval (None without intervals), rounded as the table."""
        return _round(self.intervals.half_width_max()) if self.intervals else None

    def table(self) -> list[dict[str, Any]]:
        """Per position: the propensity used (relative to rank 1), its estimator, EM's, the raw CTR."""
        rows = []
        for p in range(1, len(self.ctr) + 1):
            used = self.propensities.at(p) if self.propensities and self.propensities.usable(p) else None
            em = self.em.propensities.at(p) if self.em else None
            row = {"position": p, "relative": _round(used), "estimator": self.estimators[p - 1],
                   "em_relative": _round(em), "ctr": _round(self.ctr[p - 1])}
            if self.intervals is not None and used is not None:
                row.update(low=_round(self.intervals.low[p - 1]), high=_round(self.intervals.high[p - 1]))
            rows.append(row)
        return rows


def _round(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, 4)


def derive(train: Sessions, heldout: Sessions, depth: int, em_iterations: int, clip: float,
           coec_min_impressions: int, within: Within = "day", bootstrap_rounds: int = 0) -> Derived:
    """Propensities and pairs of the training sessions, judgments of the held-out ones; with
    `bootstrap_rounds`, the propensities' 95% interval per rank over that many resamples of the query texts."""
    notes = []
    em = harvested = None
    try:
        em = fit_pbm(train, depth, em_iterations)
        harvested = harvest_propensities(train, depth, within=within)
    except ClickDataError as exc:
        notes.append(str(exc))
    props = harvested
    if props is not None and not all(props.usable(r) for r in range(1, depth + 1)):
        lost = [r for r in range(2, depth + 1) if not props.usable(r)]
        notes.append(f"ranks {lost}: no swap in the logs links them to rank 1, so their clicks get no IPS weight "
                     "(a small feedback-serving randpair_share gives such swaps)")
    shown, clicked = train.counts(depth).per_position() if len(train) else ([0] * depth, [0] * depth)
    ctr = [float(c) / n if n else None for c, n in zip(clicked, shown, strict=True)]
    ips = ips_pairs(train, props, clip) if props is not None else PairSet([], {"no propensities": 1})
    naive = naive_pairs(train, depth)
    judged = coec(heldout, depth, coec_min_impressions) if len(heldout) else None
    # the training days' propensities weight the held-out day's clicks: never estimated on the clicks they weight
    ips_judged = ips_judgments(heldout, props, depth, clip) if len(heldout) else None
    relevance: dict[tuple[str, str], float] = {}
    if len(heldout):
        try:
            relevance = click_model_judgments(fit_pbm(heldout, depth, em_iterations))
        except ClickDataError as exc:
            notes.append(f"held-out day: {exc}")
    estimators = ["harvest" if props is not None and props.usable(r) else None for r in range(1, depth + 1)]
    intervals = None
    if props is not None and bootstrap_rounds:
        intervals = propensity_intervals(train, depth, within, bootstrap_rounds, estimate=props)
        if (wide := intervals.half_width_max()) is not None:
            notes.append(f"95% interval up to +-{wide:.2f} at a rank ({bootstrap_rounds} resamples of the query "
                         "texts): the IPS weights are no surer than that")
    return Derived(props, "; ".join(notes) or "estimated on the training days", em, ctr, ips, naive, judged,
                   relevance, estimators, intervals, ips_judged)
