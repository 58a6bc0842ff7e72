"""The evaluate stage's output files, shared by `uniret evaluate` on the DAG and on any BEIR folder."""

from __future__ import annotations

from pathlib import Path

from uniret.core.runs import Run, write_run
from uniret.evaluation.scoring import Scores
from uniret.utils.files import atomic_write_json, atomic_write_text

METRICS_JSON = "metrics.json"
METRICS_MD = "metrics.md"
PER_QUERY_DIR = "per_query"
RUNS_DIR = "runs"


def write_evaluation(out: Path, scores: Scores, table: str, saved: dict[str, dict[str, Run]], split: str) -> None:
    """metrics.json, metrics.md, per_query/<system>/<dataset>.json and runs/<system>/<dataset>.trec
    for the runs in `saved` (those that exist nowhere else)."""
    atomic_write_json(out / METRICS_JSON, scores.doc)
    atomic_write_text(out / METRICS_MD, f"# Evaluation ({split} split)\n\n{table}")
    for system, by_dataset in scores.per_query.items():
        for dataset, rows in by_dataset.items():
            atomic_write_json(out / PER_QUERY_DIR / system / f"{dataset}.json", rows)
    for system, by_dataset in saved.items():
        for dataset, run_ in by_dataset.items():
            write_run(out / RUNS_DIR / system / f"{dataset}.trec", run_, tag=system)
