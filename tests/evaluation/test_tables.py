"""metrics_table: dataset x system rows, macro rows, metric columns."""

from __future__ import annotations

from uniret.evaluation.tables import metrics_table

DOC = {
    "datasets": {
        "train": {"good": {"mrr@10": 1.0, "map": 1.0}, "half": {"mrr@10": 0.5, "map": 0.5}},
        "zs": {"good": {"mrr@10": 0.25, "map": 0.25}, "half": {"mrr@10": 0.5}},
    },
    "macro": {"good": {"mrr@10": 0.625, "map": 0.625}, "half": {"mrr@10": 0.5, "map": 0.5}},
    "zero_shot_macro": {"good": {"mrr@10": 0.25, "map": 0.25}, "half": {"mrr@10": 0.5, "map": 0.5}},
    "num_queries": {"train": 2, "zs": 4},
}


def test_table_rows_and_macro_rows():
    lines = metrics_table(DOC, ["mrr@10", "map"]).splitlines()
    assert lines[0] == "| dataset | system | queries | mrr@10 | map |"
    assert lines[1] == "| --- | --- | --- | ---: | ---: |"
    assert "| zs | good | 4 | 0.2500 | 0.2500 |" in lines
    assert "| zs | half | 4 | 0.5000 | - |" in lines  # a metric the system lacks
    assert lines[-4:] == [
        "| **macro** | good |  | 0.6250 | 0.6250 |",
        "| **macro** | half |  | 0.5000 | 0.5000 |",
        "| **zero-shot macro** | good |  | 0.2500 | 0.2500 |",
        "| **zero-shot macro** | half |  | 0.5000 | 0.5000 |",
    ]
    assert len(lines) == 2 + 4 + 4


def test_no_zero_shot_rows_when_empty():
    doc = {**DOC, "zero_shot_macro": {}}
    assert "zero-shot" not in metrics_table(doc, ["map"])
