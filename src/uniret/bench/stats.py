"""Latency series -> percentiles and throughput."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MS = 1000.0


def latency_summary(seconds: Sequence[float], wall_seconds: float | None = None) -> dict:
    """p50/p95/p99/mean in ms and QPS (count / wall time; sequential series: count / sum)."""
    values = np.asarray(seconds, dtype=np.float64)
    if values.size == 0:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None, "mean_ms": None, "qps": None}
    wall = wall_seconds if wall_seconds is not None else float(values.sum())
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {
        "n": int(values.size),
        "p50_ms": round(float(p50) * MS, 3),
        "p95_ms": round(float(p95) * MS, 3),
        "p99_ms": round(float(p99) * MS, 3),
        "mean_ms": round(float(values.mean()) * MS, 3),
        "qps": round(values.size / wall, 2) if wall > 0 else None,
    }
