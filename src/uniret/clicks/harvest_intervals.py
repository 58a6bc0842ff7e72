"""How precise harvested propensities are: a bootstrap over the logged query texts.

A query's impressions are not independent of each other (the same documents, the same users' taste for
them), so the resampling unit is the query text: each round draws as many texts as the logs hold, with
replacement, keeps every impression of a drawn text as often as it was drawn, and harvests again under
the same comparison rule (`within`). Drawing a text m times multiplies its rows' impressions and clicks
by m, which is how the rounds are computed: no impression is copied. The percentiles of the rounds'
estimates per rank give the interval. What it tells the reader: whether the logs pin the propensities
down at all (E79: five simulated nights left +-0.19-0.24 at some rank; IPS weights inherit that).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from uniret.clicks.harvest import Weighting, Within, all_pairs, harvest_propensities, summed_harvest
from uniret.clicks.propensity import Propensities, connected_to_first
from uniret.clicks.sessions import PairCounts, Sessions


@dataclass(frozen=True)
class Intervals:
    """Per rank 1..depth: the bootstrap's lower and upper percentile of the propensity relative to rank 1
    (None: not identified in any round)."""

    low: tuple[float | None, ...]
    high: tuple[float | None, ...]
    rounds: int
    level: float

    def half_width_max(self) -> float | None:
        """The widest half-interval over ranks 2..depth (None when none is identified)."""
        widths = [(h - lo) / 2 for lo, h in zip(self.low[1:], self.high[1:], strict=True)
                  if lo is not None and h is not None]
        return max(widths) if widths else None


def _scaled(counts: PairCounts, mult: np.ndarray) -> PairCounts:
    """The counts with each row's impressions and clicks times its query's draw count (0: left out)."""
    keep = mult > 0
    return PairCounts(counts.depth, counts.pairs, counts.pair[keep], counts.position[keep],
                      counts.shown[keep] * mult[keep], counts.clicked[keep] * mult[keep])


def _rounds_harvest(counts: list[PairCounts], mults: list[np.ndarray], weighting: Weighting):
    support, h = summed_harvest([_scaled(c, m) for c, m in zip(counts, mults, strict=True)], weighting)
    return connected_to_first(support), h


def propensity_intervals(sessions: Sessions, depth: int, within: Within = "day", rounds: int = 100,
                         level: float = 0.95, seed: int = 0, weighting: Weighting = "harmonic",
                         max_iterations: int = 1000, estimate: Propensities | None = None) -> Intervals:
    """Percentile intervals of the harvested propensities (relative to rank 1) over `rounds` resamples of
    the query texts; `within` as in `harvest_propensities`. `estimate`: that function's fit of the same
    sessions, where the caller has it (each round starts there; fitted here otherwise)."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if not len(sessions):
        raise ValueError("no impression to resample")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    groups = [sessions] if within == "all" else list(sessions.groups(within).values())
    keys = sorted({imp.query_key for imp in sessions})
    index = {key: i for i, key in enumerate(keys)}
    counts = [g.counts(depth) for g in groups]
    row_query = [np.array([index[c.pairs[p][0]] for p in c.pair], dtype=np.int64) for c in counts]
    if estimate is None:
        estimate = harvest_propensities(sessions, depth, weighting, max_iterations, within)
    # each round starts at the full logs' fit (far fewer L-BFGS steps than from 0.5). Only ratios are
    # identified: scaled so the largest is 0.5, a round can move any rank above rank 1's (started with p_1
    # near its bound of 1, E75's seed-8 logs had every upper end capped at 1)
    relative = np.nan_to_num(np.asarray(estimate.relative, dtype=float), nan=0.0)
    start = 0.5 * np.clip(relative, 1e-6, None) / np.max(relative)
    rng = np.random.default_rng(seed)
    draws = np.full((rounds, depth), np.nan)
    draws[:, 0] = 1.0
    for r in range(rounds):
        mult = np.bincount(rng.integers(0, len(keys), len(keys)), minlength=len(keys))
        identified, h = _rounds_harvest(counts, [mult[rows] for rows in row_query], weighting)
        if identified[1:].any():
            p, _ = all_pairs(h, identified, max_iterations, start)
            draws[r, identified] = p[identified] / p[0]
    tail = (1.0 - level) / 2 * 100
    low, high = [], []
    for col in draws.T:
        seen = col[~np.isnan(col)]
        low.append(float(np.percentile(seen, tail)) if len(seen) else None)
        high.append(float(np.percentile(seen, 100 - tail)) if len(seen) else None)
    return Intervals(tuple(low), tuple(high), rounds, level)
