"""Training logs written by the training stages: artifacts/<stage>/metrics/train.tsv.

A TSV with a header row (step, lr, loss, ... and, for sparse heads, active_terms_q/active_terms_d).
Empty cells read as NaN (a column logged only every few steps); anything else non-numeric is a
DataError naming file, line and column.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from uniret.core.errors import DataError, DataProblem

TRAIN_TSV = Path("metrics") / "train.tsv"
STEP = "step"
LOSS = "loss"
SPARSITY_COLUMNS = ("active_terms_q", "active_terms_d")

Columns = dict[str, list[float]]


def read_train_tsv(path: str | Path) -> Columns:
    """Columns of a train.tsv as floats, keyed by header name; requires `step`."""
    path = Path(path)
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if not header:
            raise DataError(DataProblem(path, 1, None, "empty file: expected a header row"))
        header = [h.strip() for h in header]
        if STEP not in header:
            raise DataError(DataProblem(path, 1, STEP, f"header lacks column {STEP!r}: {header}"))
        cols: Columns = {h: [] for h in header}
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise DataError(DataProblem(path, lineno, None, f"{len(row)} fields, header has {len(header)}"))
            for name, cell in zip(header, row, strict=True):
                cell = cell.strip()
                try:
                    cols[name].append(float(cell) if cell else math.nan)
                except ValueError as exc:
                    raise DataError(DataProblem(path, lineno, name, f"not a number: {cell!r}")) from exc
    return cols


def find_train_logs(artifacts: Path, stages: list[str]) -> tuple[dict[str, Columns], list[str]]:
    """({stage: columns} for stages that logged, [notes on stages that did not])."""
    logs, notes = {}, []
    for stage in stages:
        path = artifacts / stage / TRAIN_TSV
        if path.is_file():
            logs[stage] = read_train_tsv(path)
        else:
            notes.append(f"{stage}: no training log at {path}")
    return logs, notes
