"""Score every system on every eval dataset: the metrics.json document and per-query values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from uniret.data.beir import Qrels
from uniret.evaluation.macros import MACRO, ZERO_SHOT_MACRO, zero_shot_datasets
from uniret.evaluation.metrics import PerQuery, evaluate_run, mean_over
from uniret.evaluation.sources import Runs

JSON_DECIMALS = 6  # metrics.json is diffed by DVC and git: far below any meaningful difference


@dataclass
class Scores:
    """What the evaluate stage writes."""

    doc: dict[str, Any]  # the metrics.json document
    per_query: dict[str, dict[str, PerQuery]]  # {system: {dataset: {query: {metric: value}}}}


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, JSON_DECIMALS) for k, v in values.items()}


def check_coverage(runs: Runs, datasets: Sequence[str]) -> None:
    """Every system must have a run for every eval dataset, so macro averages compare like with like."""
    for system, by_dataset in runs.items():
        missing = [d for d in datasets if d not in by_dataset]
        if missing:
            raise ValueError(f"system {system!r} has no run for eval dataset(s) {', '.join(missing)}")


def score_systems(
    qrels: dict[str, Qrels],
    runs: Runs,
    metrics: Sequence[str],
    ignore_identical_ids: bool,
    train_dataset: str,
) -> Scores:
    """Evaluate `runs` ({system: {dataset: Run}}) on `qrels` ({dataset: Qrels}).

    The document holds, per dataset and system, the means over that dataset's judged queries
    (a judged query without results scores 0); `macro` is the unweighted mean over datasets
    (BEIR's average) and `zero_shot_macro` the same over datasets other than `train_dataset`
    (empty when there are none); `num_queries` counts judged queries per dataset.
    """
    datasets = list(qrels)
    check_coverage(runs, datasets)
    table: dict[str, dict[str, dict[str, float]]] = {d: {} for d in datasets}
    per_query: dict[str, dict[str, PerQuery]] = {s: {} for s in runs}
    pairs = [(s, d) for s in sorted(runs) for d in datasets]
    for system, dataset in tqdm(pairs, desc="evaluate", unit="run", disable=len(pairs) < 2):
        rows, aggregate = evaluate_run(qrels[dataset], runs[system][dataset], metrics, ignore_identical_ids)
        table[dataset][system] = aggregate
        per_query[system][dataset] = {q: _rounded(v) for q, v in rows.items()}

    zero_shot = zero_shot_datasets(datasets, train_dataset)
    macro, zs_macro = {}, {}
    for system in sorted(runs):
        macro[system] = _rounded(mean_over((table[d][system] for d in datasets), metrics))
        if zero_shot:
            zs_macro[system] = _rounded(mean_over((table[d][system] for d in zero_shot), metrics))
    doc = {
        "datasets": {d: {s: _rounded(v) for s, v in table[d].items()} for d in datasets},
        MACRO: macro,
        ZERO_SHOT_MACRO: zs_macro,
        "num_queries": {d: len(qrels[d]) for d in datasets},
    }
    return Scores(doc=doc, per_query=per_query)
