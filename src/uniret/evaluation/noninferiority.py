"""Is a candidate worse than production with confidence, by more than a margin? A paired test.

Candidate and production are scored on the same queries. The statistic is the mean per-query
difference (candidate minus production), over one dataset or pooled over several as their macro
(the mean of each set's mean, queries resampled within each set: uniret.evaluation.significance).
The candidate is *worse by more than the margin* when the one-sided upper confidence bound of that
difference lies below -margin. A small set has a wide interval, so it cannot block on a difference
inside its own noise; a real loss of `margin + 2 z se` is caught about 95% of the time
(`detectable_loss` measures it from real per-query differences instead of assuming normality).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from uniret.evaluation.significance import paired_bootstrap


@dataclass(frozen=True)
class NonInferiority:
    """Candidate minus production, its interval and the verdict against `margin`."""

    diff: float
    low: float  # two-sided interval at 2*confidence-1: `high` is the one-sided upper bound at `confidence`
    high: float
    margin: float
    confidence: float
    queries: int
    worse: bool  # high < -margin: worse, with confidence, by more than the margin

    def as_dict(self, digits: int = 5) -> dict:
        out = asdict(self)
        for key in ("diff", "low", "high"):
            out[key] = round(out[key], digits)
        return out

    def interval_text(self) -> str:
        """e.g. "-0.0042 [-0.0121, +0.0031]"."""
        return f"{self.diff:+.4f} [{self.low:+.4f}, {self.high:+.4f}]"


def noninferiority(sets: Mapping[str, tuple[Sequence[float], Sequence[float]]], margin: float,
                   confidence: float = 0.95, resamples: int = 10000, seed: int = 0) -> NonInferiority:
    """Test candidate against production on `sets` ({name: (production's per-query values, the
    candidate's, same query order)}); several sets pool as their macro. Seeded: the same scores
    always give the same verdict."""
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if not 0.5 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0.5, 1), got {confidence}")
    cmp = paired_bootstrap(sets, resamples=resamples, level=2 * confidence - 1, seed=seed)
    queries = sum(int(s["queries"]) for s in cmp.per_set.values())
    return NonInferiority(cmp.diff, cmp.ci_low, cmp.ci_high, margin, confidence, queries,
                          cmp.ci_high < -margin - 1e-12)


def threshold_worse(diff: float, max_regression: float) -> bool:
    """The point rule the paired test replaces: a drop of more than `max_regression`, whatever the noise."""
    return diff < -max_regression - 1e-9


def _upper_bounds(diffs: Mapping[str, np.ndarray], confidence: float, draws: int, rng) -> np.ndarray:
    """Upper confidence bounds the test would compute on `draws` fresh query samples of the same
    sizes, drawn from `diffs` (normal approximation inside each draw: mean + z * se)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(confidence)
    means, variances = np.zeros(draws), np.zeros(draws)
    for d in diffs.values():
        sample = d[rng.integers(0, len(d), size=(draws, len(d)))]
        means += sample.mean(axis=1)
        variances += sample.var(axis=1, ddof=1) / len(d)
    k = len(diffs)
    return means / k + z * np.sqrt(variances) / k


def detectable_loss(diffs: Mapping[str, Sequence[float]], margin: float, confidence: float = 0.95,
                    power: float = 0.95, draws: int = 4000, seed: int = 0) -> float:
    """The smallest true loss (a shift of every query's difference) that the test blocks with
    probability `power`, simulated from measured per-query differences of an equal pair.

    The differences are centred (an equal pair's true difference is taken as 0) and the queries
    resampled `draws` times; a shift of -L moves the upper bound by exactly -L, so the loss caught
    in `power` of the draws is `margin` plus that quantile of the centred upper bound."""
    rng = np.random.default_rng(seed)
    centred = {}
    for name, values in diffs.items():
        d = np.asarray(values, dtype=np.float64)
        if d.ndim != 1 or len(d) < 2:
            raise ValueError(f"{name}: need at least two per-query differences, got shape {d.shape}")
        centred[name] = d - d.mean()
    if not centred:
        raise ValueError("detectable_loss: no sets")
    bounds = _upper_bounds(centred, confidence, draws, rng)
    return float(margin + np.quantile(bounds, power))
