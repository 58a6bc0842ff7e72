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


def test_system_table_pivots_systems_by_dataset_with_a_secondary_metric():
    from uniret.evaluation.tables import system_table

    lines = system_table({**DOC, "train_dataset": "train"}, "mrr@10", "map", decimals=2).splitlines()
    assert lines[0] == "| system | train (in-domain) | zs | zero-shot macro |"
    swapped = system_table({**DOC, "train_dataset": "zs"}, "mrr@10").splitlines()[0]
    assert swapped == "| system | zs (in-domain) | train | zero-shot macro |"  # the in-domain column first
    assert lines[1] == "| --- | ---: | ---: | ---: |"
    assert lines[2] == "| good | 1.00 (1.00) | 0.25 (0.25) | 0.25 |"
    assert lines[3] == "| half | 0.50 (0.50) | 0.50 | 0.50 |"  # no secondary value: the metric alone
    assert len(lines) == 4


def test_system_table_lists_baselines_before_trained_systems():
    from uniret.evaluation.tables import system_table

    doc = {"datasets": {"d": {"unifier/uni": {"m": 0.5}, "zeroshot-minilm/dense": {"m": 0.4}, "bm25": {"m": 0.3}}}}
    rows = [line.split(" | ")[0] for line in system_table(doc, "m").splitlines()[2:]]
    assert rows == ["| bm25", "| zeroshot-minilm/dense", "| unifier/uni"]
