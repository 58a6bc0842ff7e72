"""How sure a comparison of two systems is: a paired bootstrap over queries.

Two systems scored on the same queries give one per-query difference each. With several dev sets
the statistic is the one the index stage maximises when it learns fusion weights: the mean over
the sets of each set's mean difference, so a large set does not drown a small one. Each resample
draws every set's queries with replacement (sets stay apart), and the percentile interval of the
resampled statistic says whether a gain of a few thousandths is more than the luck of which
queries the sets hold (Efron & Tibshirani 1993; Sakai 2006 for IR evaluation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass
class PairedComparison:
    """B minus A: the observed statistic, its bootstrap interval and the share of resamples <= 0."""

    diff: float
    ci_low: float
    ci_high: float
    level: float
    share_not_better: float  # resamples whose statistic is <= 0: a one-sided bootstrap p-value
    resamples: int
    per_set: dict[str, dict[str, float]]  # name -> {queries, a, b, diff}

    def as_dict(self, digits: int = 5) -> dict:
        """Rounded for reports."""
        out = asdict(self)
        for key in ("diff", "ci_low", "ci_high", "share_not_better"):
            out[key] = round(out[key], digits)
        out["per_set"] = {n: {k: (v if k == "queries" else round(v, digits)) for k, v in s.items()}
                          for n, s in self.per_set.items()}
        return out


def per_query_pairs(a: Mapping[str, float], b: Mapping[str, float], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Both systems' values on the same queries, in one order; a query one side lacks is an error."""
    if set(a) != set(b):
        only = sorted(set(a) ^ set(b))[:5]
        raise ValueError(f"{name}: the two systems were scored on different queries (e.g. {only})")
    qids = sorted(a)
    return np.array([a[q] for q in qids], dtype=np.float64), np.array([b[q] for q in qids], dtype=np.float64)


def paired_bootstrap(sets: Mapping[str, tuple[Sequence[float], Sequence[float]]], resamples: int = 10000,
                     level: float = 0.95, seed: int = 0) -> PairedComparison:
    """Compare B with A on `sets` ({name: (A's per-query values, B's, same query order)})."""
    if not sets:
        raise ValueError("paired_bootstrap: no dev sets")
    if resamples < 1 or not 0.0 < level < 1.0:
        raise ValueError(f"paired_bootstrap: need resamples >= 1 and 0 < level < 1, got {resamples}, {level}")
    rng = np.random.default_rng(seed)
    per_set, boot = {}, np.zeros(resamples)
    for name, (a_values, b_values) in sets.items():
        a, b = np.asarray(a_values, dtype=np.float64), np.asarray(b_values, dtype=np.float64)
        if a.shape != b.shape or a.ndim != 1 or not len(a):
            raise ValueError(f"{name}: need two equally long, non-empty per-query vectors, got {a.shape} and {b.shape}")
        d = b - a
        per_set[name] = {"queries": len(d), "a": float(a.mean()), "b": float(b.mean()), "diff": float(d.mean())}
        draws = rng.integers(0, len(d), size=(resamples, len(d)))
        boot += d[draws].mean(axis=1)
    boot /= len(sets)
    diff = float(np.mean([s["diff"] for s in per_set.values()]))
    tail = (1.0 - level) / 2
    low, high = np.quantile(boot, [tail, 1.0 - tail])
    return PairedComparison(diff, float(low), float(high), level, float(np.mean(boot <= 0.0)), resamples, per_set)
