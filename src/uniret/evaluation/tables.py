"""Markdown tables of evaluation results (metrics.md, logs, reports)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DECIMALS = 4  # enough to see a 0.001 regression, short enough to read


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.{DECIMALS}f}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def metrics_table(doc: dict[str, Any], metrics: Sequence[str]) -> str:
    """A markdown table of a metrics.json document.

    Rows are dataset x system (with each dataset's judged-query count), then one macro row per
    system and one zero-shot macro row per system (when there are zero-shot datasets); columns
    are `metrics`. A metric a system lacks shows as "-".
    """
    header = ["dataset", "system", "queries", *metrics]
    lines = [_row(header), _row(["---"] * 3 + ["---:"] * len(metrics))]
    num_queries = doc.get("num_queries", {})
    for dataset, systems in doc.get("datasets", {}).items():
        for system, values in systems.items():
            cells = [_cell(values.get(m)) for m in metrics]
            lines.append(_row([dataset, system, str(num_queries.get(dataset, "")), *cells]))
    for label, key in (("macro", "macro"), ("zero-shot macro", "zero_shot_macro")):
        for system, values in doc.get(key, {}).items():
            if values:
                lines.append(_row([f"**{label}**", system, "", *[_cell(values.get(m)) for m in metrics]]))
    for dataset, section in (doc.get("overlap") or {}).items():  # uniret.evaluation.overlap_scores
        for subset in ("novel", "seen"):
            count = str((section.get("counts") or {}).get(subset, ""))
            for system, values in (section.get(subset) or {}).items():
                lines.append(_row([f"{dataset} ({subset})", system, count, *[_cell(values.get(m)) for m in metrics]]))
    return "\n".join(lines) + "\n"


def system_table(doc: dict[str, Any], metric: str, secondary: str | None = None, decimals: int = 3) -> str:
    """A markdown table with one row per system and one column per dataset, then the zero-shot macro.

    Cells read "metric (secondary)", e.g. "0.730 (0.961)" for nDCG@10 (Recall@100); a value a
    system lacks shows as "-". The in-domain dataset (`train_dataset`) comes first; BM25 and the
    untrained "zeroshot-*" baselines come before the trained systems, each group in first-seen order.
    """
    train = doc.get("train_dataset")
    datasets = sorted(doc.get("datasets", {}), key=lambda d: d != train)
    seen = dict.fromkeys(s for values in doc.get("datasets", {}).values() for s in values)
    systems = sorted(seen, key=lambda s: 0 if s == "bm25" else 1 if s.startswith("zeroshot-") else 2)

    def cell(values: dict[str, float] | None) -> str:
        if not values or values.get(metric) is None:
            return "-"
        text = f"{values[metric]:.{decimals}f}"
        if secondary and values.get(secondary) is not None:
            text += f" ({values[secondary]:.{decimals}f})"
        return text

    names = [f"{d} (in-domain)" if d == train else d for d in datasets]
    zero_shot = doc.get("zero_shot_macro") or {}
    header = ["system", *names] + (["zero-shot macro"] if zero_shot else [])
    lines = [_row(header), _row(["---"] + ["---:"] * (len(header) - 1))]
    for system in systems:
        cells = [cell(doc["datasets"][d].get(system)) for d in datasets]
        if zero_shot:
            cells.append(cell({metric: (zero_shot.get(system) or {}).get(metric)}))
        lines.append(_row([system, *cells]))
    return "\n".join(lines) + "\n"
