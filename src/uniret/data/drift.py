"""Drift of a dataset against its previously validated snapshot.

Per file we keep the row count and, for corpus and queries, a sketch of the text-length
distribution (mean plus evenly spaced quantiles). The next validation compares its own stats
with the stored ones: relative row-count change, relative mean-length change and the
Kolmogorov-Smirnov distance between the two length distributions (computed on the sketches,
which bounds its error by 1/sketch_points).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from uniret.config.sections import DriftConfig
from uniret.data.tables import CORPUS, QUERIES, DatasetTables
from uniret.utils.files import atomic_write_json

STATS_DIR = "stats"
STATS_VERSION = 1


@dataclass
class DriftCheck:
    """One drift measure of one file against the previous snapshot."""

    dataset: str
    file: str
    metric: str  # row_count_change | mean_length_change | length_ks
    previous: float
    current: float
    value: float  # the measured change or distance
    threshold: float
    ok: bool

    def message(self) -> str:
        state = "ok" if self.ok else "DRIFT"
        return (
            f"{self.dataset}: {self.file}: drift check {self.metric} = {self.value:.3f} "
            f"(threshold {self.threshold:g}; previous {self.previous:g}, now {self.current:g}): {state}"
        )


def length_sketch(lengths: np.ndarray, points: int) -> dict[str, Any]:
    """Mean and `points` evenly spaced quantiles of a length distribution."""
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.size == 0:
        return {"mean": 0.0, "quantiles": []}
    qs = np.quantile(lengths, np.linspace(0.0, 1.0, points))
    return {"mean": float(lengths.mean()), "quantiles": [float(q) for q in qs]}


def dataset_stats(tables: DatasetTables, cfg: DriftConfig) -> dict[str, Any]:
    """Row counts of every file and length sketches of corpus and queries text."""
    rows: dict[str, int] = {}
    lengths: dict[str, dict[str, Any]] = {}
    for table in tables.files:
        if not table.ok:
            continue
        rows[table.rel] = int(len(table.frame))
        if table.kind in (CORPUS, QUERIES):
            lengths[table.rel] = length_sketch(table.frame["text_chars"].to_numpy(), cfg.sketch_points)
    return {"version": STATS_VERSION, "dataset": tables.name, "rows": rows, "text_lengths": lengths}


def ks_distance(a: list[float] | np.ndarray, b: list[float] | np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    a, b = np.sort(np.asarray(a, dtype=np.float64)), np.sort(np.asarray(b, dtype=np.float64))
    if a.size == 0 or b.size == 0:
        return 0.0 if a.size == b.size else 1.0
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, grid, side="right") / a.size
    cdf_b = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(cdf_a - cdf_b)))


def _relative(previous: float, current: float) -> float:
    if previous == 0:
        return 0.0 if current == 0 else float("inf")
    return abs(current - previous) / previous


def _median(sketch: dict[str, Any]) -> float:
    return float(np.median(sketch["quantiles"])) if sketch["quantiles"] else 0.0


def compare_stats(previous: dict[str, Any], current: dict[str, Any], cfg: DriftConfig) -> list[DriftCheck]:
    """Drift checks for every file present in both snapshots."""
    name = current["dataset"]
    checks: list[DriftCheck] = []
    for rel, now in sorted(current["rows"].items()):
        before = previous.get("rows", {}).get(rel)
        if before is None:
            continue
        change = _relative(before, now)
        checks.append(
            DriftCheck(name, rel, "row_count_change", before, now, change, cfg.max_row_count_change,
                       change <= cfg.max_row_count_change)
        )
    for rel, now in sorted(current["text_lengths"].items()):
        before = previous.get("text_lengths", {}).get(rel)
        if not before:
            continue
        change = _relative(before["mean"], now["mean"])
        checks.append(
            DriftCheck(name, rel, "mean_length_change", before["mean"], now["mean"], change,
                       cfg.max_mean_length_change, change <= cfg.max_mean_length_change)
        )
        ks = ks_distance(before["quantiles"], now["quantiles"])
        # previous/current of the KS check are the median lengths, for the reader's orientation
        checks.append(
            DriftCheck(name, rel, "length_ks", _median(before), _median(now), ks, cfg.max_length_ks,
                       ks <= cfg.max_length_ks)
        )
    return checks


def stats_path(validate_dir: Path, dataset: str) -> Path:
    return Path(validate_dir) / STATS_DIR / f"{dataset}.json"


def load_stats(validate_dir: Path, dataset: str) -> dict[str, Any] | None:
    """The stats stored by the previous successful validate run, or None (first run)."""
    path = stats_path(validate_dir, dataset)
    if not path.is_file():
        return None
    stats = json.loads(path.read_text(encoding="utf-8"))
    return stats if stats.get("version") == STATS_VERSION else None


def save_stats(validate_dir: Path, stats: dict[str, Any]) -> Path:
    return atomic_write_json(stats_path(validate_dir, stats["dataset"]), stats)
