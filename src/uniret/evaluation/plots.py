"""Report figures (matplotlib, Agg backend, config dir kept out of HOME)."""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

# Group-bar layout: the bars of one dataset fill this fraction of the slot between datasets.
GROUP_WIDTH = 0.8
PANEL_SIZE = (4.5, 3.5)  # inches per panel of a multi-panel figure
BAR_FIGSIZE_PER_DATASET = 1.6  # inches of width per dataset group
MIN_BAR_FIG_WIDTH = 5.0
BAR_FIG_HEIGHT = 4.0

Series = tuple[list[float], list[float]]  # (x, y)


def _pyplot():
    """Import pyplot on the Agg backend; matplotlib's cache goes to a temp dir unless MPLCONFIGDIR is set."""
    os.environ.setdefault("MPLCONFIGDIR", str(Path(tempfile.gettempdir()) / "uniret-matplotlib"))
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def grouped_bars(
    values: dict[str, dict[str, float | None]], series: list[str], path: Path, title: str, ylabel: str, dpi: int
) -> Path:
    """One group per dataset (x), one bar per series (e.g. candidate, production, bm25); None: no bar."""
    plt = _pyplot()
    datasets = list(values)
    width = GROUP_WIDTH / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(MIN_BAR_FIG_WIDTH, BAR_FIGSIZE_PER_DATASET * len(datasets)), BAR_FIG_HEIGHT))
    for i, name in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(datasets))]
        ys = [values[d].get(name) for d in datasets]
        ax.bar([x for x, y in zip(xs, ys, strict=True) if y is not None],
               [y for y in ys if y is not None], width, label=name)
    ax.set_xticks(range(len(datasets)), datasets)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def line_panels(panels: dict[str, dict[str, Series]], path: Path, xlabel: str, ylabel: str, dpi: int) -> Path:
    """One panel per key (e.g. training stage), one line per series in it; NaN points are dropped."""
    plt = _pyplot()
    n = max(len(panels), 1)
    fig, axes = plt.subplots(1, n, figsize=(PANEL_SIZE[0] * n, PANEL_SIZE[1]), squeeze=False)
    for ax, (title, lines) in zip(axes[0], panels.items(), strict=False):
        for label, (xs, ys) in lines.items():
            pts = [(x, y) for x, y in zip(xs, ys, strict=True) if not (math.isnan(x) or math.isnan(y))]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if lines:
            ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
