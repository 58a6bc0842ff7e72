"""Incremental training metrics: a TSV with a header (readable by `dvc plots`) and a summary JSON.

Rows are appended and flushed as training goes, so a crash keeps what was logged. On resume the
rows after the checkpoint's step are dropped (they belong to the lost part of the run), which
makes a resumed run's file identical to an uninterrupted one.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from uniret.utils.files import atomic_write_text

FIRST_COLUMNS = ("step", "lr", "loss", "grad_norm")


def _format(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return repr(value)  # shortest exact round-trip: rows compare equal across runs


class MetricsTsv:
    """Append-only TSV of metric rows keyed by `step`; the header grows when new keys appear."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.columns: list[str] = []
        self._fh = None

    def start(self, resume_step: int | None = None) -> None:
        """Fresh file (resume_step None) or keep only rows with step <= resume_step."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows: list[list[str]] = []
        if resume_step is not None and self.path.is_file():
            lines = self.path.read_text(encoding="utf-8").splitlines()
            if lines:
                self.columns = lines[0].split("\t")
                rows = [line.split("\t") for line in lines[1:] if line]
                rows = [r for r in rows if int(r[0]) <= resume_step]
        else:
            self.columns = []
        self._rewrite(rows)

    def _rewrite(self, rows: list[list[str]]) -> None:
        self.close()
        text = "".join("\t".join(r) + "\n" for r in ([self.columns] if self.columns else []) + rows)
        atomic_write_text(self.path, text)
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        """Append one row (must hold `step`); unseen keys extend the header (file rewritten once)."""
        if self._fh is None:
            raise RuntimeError("MetricsTsv.start() was not called")
        new = [k for k in FIRST_COLUMNS if k in row and k not in self.columns]
        new += sorted(k for k in row if k not in self.columns and k not in FIRST_COLUMNS)
        if new:
            old = self.read_rows()
            self.columns = self.columns + new
            self._rewrite([[r.get(c, "") for c in self.columns] for r in old])
        self._fh.write("\t".join(_format(row.get(c)) for c in self.columns) + "\n")
        self._fh.flush()

    def read_rows(self) -> list[dict[str, str]]:
        """Rows written so far, as strings keyed by column."""
        if self._fh is not None:
            self._fh.flush()
        if not self.path.is_file():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        if not lines:
            return []
        header = lines[0].split("\t")
        return [dict(zip(header, line.split("\t"), strict=False)) for line in lines[1:] if line]

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class LogWindow:
    """Averages of the per-step values over the steps since the last metrics row."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def add(self, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.sums[key] = self.sums.get(key, 0.0) + float(value)
            self.counts[key] = self.counts.get(key, 0) + 1

    def means(self) -> dict[str, float]:
        return {k: self.sums[k] / self.counts[k] for k in self.sums}

    def reset(self) -> None:
        self.sums.clear()
        self.counts.clear()

    def state_dict(self) -> dict[str, Any]:
        return {"sums": dict(self.sums), "counts": dict(self.counts)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sums = {k: float(v) for k, v in state["sums"].items()}
        self.counts = {k: int(v) for k, v in state["counts"].items()}
