"""Two evaluated systems, compared per dataset with a paired bootstrap over queries.

Reads the evaluate stage's (or `uniret evaluate --data ...`'s) per_query/<system>/<dataset>.json
and reports, per dataset and over several of them (the mean of the datasets' means, as the macro
columns of metrics.md average), B - A with its bootstrap interval. Used by `uniret significance`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from uniret.core.errors import DataError, DataProblem
from uniret.evaluation.macros import MACRO, ZERO_SHOT_MACRO, zero_shot_datasets
from uniret.evaluation.outputs import PER_QUERY_DIR
from uniret.evaluation.significance import PairedComparison, paired_bootstrap, per_query_pairs


def read_per_query(evaluated: Path, system: str, dataset: str, metric: str) -> dict[str, float]:
    """{query: metric} of one system on one dataset; errors name the file and the missing metric."""
    path = evaluated / PER_QUERY_DIR / system / f"{dataset}.json"
    if not path.is_file():
        known = sorted(p.name for p in (evaluated / PER_QUERY_DIR).glob("*")) if (evaluated / PER_QUERY_DIR).is_dir() else []
        raise FileNotFoundError(f"{path}: no per-query scores of {system!r} on {dataset!r} (systems there: {known})")
    try:
        rows = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(DataProblem(path, exc.lineno, None, f"not JSON: {exc.msg}")) from exc
    if not isinstance(rows, dict):
        raise DataError(DataProblem(path, None, None, "expected {query: {metric: value}}"))
    missing = sorted(q for q, values in rows.items() if not isinstance(values, dict) or metric not in values)
    if missing:
        there = sorted(rows[missing[0]]) if isinstance(rows[missing[0]], dict) else []
        raise DataError(DataProblem(path, None, f"{missing[0]}.{metric}",
                                    f"query {missing[0]!r} has no {metric!r} (metrics there: {there})"))
    for q, values in rows.items():
        value = values[metric]
        # a string or a bool where a score belongs is damage, not a number to coerce
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise DataError(DataProblem(path, None, f"{q}.{metric}", f"query {q!r}: {metric} must be a finite "
                                        f"number, got {type(value).__name__} {value!r:.40}"))
    return {q: float(values[metric]) for q, values in rows.items()}


def datasets_of(evaluated: Path, system: str) -> list[str]:
    """The datasets a system was scored on."""
    return sorted(p.stem for p in (evaluated / PER_QUERY_DIR / system).glob("*.json"))


def macro_groups(datasets: Sequence[str], train_dataset: str) -> dict[str, list[str]]:
    """metrics.json's macro groups (uniret.evaluation.macros) worth a row of their own: all
    datasets when several, the zero-shot ones when several and not all of them."""
    out = {MACRO: list(datasets)} if len(datasets) > 1 else {}
    zero_shot = zero_shot_datasets(datasets, train_dataset)
    if 1 < len(zero_shot) < len(datasets):
        out[ZERO_SHOT_MACRO] = zero_shot
    return out


def compare_evaluated(evaluated: Path, a: str, b: str, metric: str, datasets: Sequence[str],
                      groups: dict[str, Sequence[str]], resamples: int, seed: int,
                      evaluated_a: Path | None = None,
                      subsets: dict[str, tuple[str, Sequence[str]]] | None = None) -> dict[str, PairedComparison]:
    """{dataset or group name: B - A}; a group pools its datasets as the macro average does.
    `evaluated_a`: where A's per_query/ lives when not beside B's (the gate's production scores);
    `subsets`: {name: (dataset, query ids)} compared on those queries alone (e.g. SciFact's novel claims)."""
    pairs, orders = {}, {}
    for d in datasets:
        a_rows = read_per_query(evaluated_a or evaluated, a, d, metric)
        b_rows = read_per_query(evaluated, b, d, metric)
        try:
            pairs[d] = per_query_pairs(a_rows, b_rows, d)
            orders[d] = sorted(a_rows)  # per_query_pairs' query order
        except ValueError as exc:  # the two files hold different queries
            raise DataError(DataProblem(evaluated / PER_QUERY_DIR / b / f"{d}.json", None, None,
                                        f"{exc} (against {(evaluated_a or evaluated) / PER_QUERY_DIR / a}/{d}.json)")) from exc
    out = {d: paired_bootstrap({d: pairs[d]}, resamples, seed=seed) for d in datasets}
    for name, members in groups.items():
        if members:
            out[name] = paired_bootstrap({d: pairs[d] for d in members}, resamples, seed=seed)
    for name, (dataset, queries) in (subsets or {}).items():
        if dataset in pairs and queries:
            keep = np.isin(orders[dataset], list(queries))
            a_values, b_values = pairs[dataset]
            out[name] = paired_bootstrap({name: (a_values[keep], b_values[keep])}, resamples, seed=seed)
    return out


def render_comparison(results: dict[str, PairedComparison], a: str, b: str, metric: str) -> str:
    """A markdown table: A, B, B - A and its interval, share of resamples where B is not better."""
    level = next(iter(results.values())).level if results else 0.95
    lines = [f"| {metric} | queries | {a} | {b} | {b} - {a} | {round(100 * level)}% interval | B not better |",
             "| --- | ---: | ---: | ---: | ---: | --- | ---: |"]
    for name, r in results.items():
        queries = sum(int(s["queries"]) for s in r.per_set.values())
        mean_a = sum(s["a"] for s in r.per_set.values()) / len(r.per_set)
        mean_b = sum(s["b"] for s in r.per_set.values()) / len(r.per_set)
        lines.append(f"| {name} | {queries} | {mean_a:.4f} | {mean_b:.4f} | {r.diff:+.4f} | "
                     f"{r.ci_low:+.4f} .. {r.ci_high:+.4f} | {100 * r.share_not_better:.1f}% |")
    return "\n".join(lines) + "\n"


def comparison_doc(a: str, b: str, metric: str, evaluated: str, results: dict[str, PairedComparison]) -> dict:
    """The JSON document of one comparison (`uniret significance --out`, results/significance/)."""
    return {"a": a, "b": b, "metric": metric, "evaluated": evaluated,
            "results": {n: r.as_dict() for n, r in results.items()}}
