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
    return "\n".join(lines) + "\n"
