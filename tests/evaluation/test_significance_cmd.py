"""`uniret significance`: two systems of an evaluate output compared per dataset and over them."""

from __future__ import annotations

import json

import pytest

from uniret.cli import main


def _write(root, system, dataset, values, metric="ndcg@10"):
    path = root / "per_query" / system / f"{dataset}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({f"q{i}": {metric: v, "map": v / 2} for i, v in enumerate(values)}))


@pytest.fixture()
def evaluated(tmp_path):
    root = tmp_path / "evaluate"
    # scifact (the params' train dataset): B better on every query by 0.2; nfcorpus / npl: equal
    _write(root, "bm25", "scifact", [0.1, 0.3, 0.5, 0.2])
    _write(root, "hybrid_bm25", "scifact", [0.3, 0.5, 0.7, 0.4])
    for name in ("nfcorpus", "npl"):
        _write(root, "bm25", name, [0.4, 0.6])
        _write(root, "hybrid_bm25", name, [0.4, 0.6])
    return root


def test_it_tables_each_dataset_the_macro_and_the_zero_shot_macro(evaluated, repo_root, tmp_path, capsys):
    out = tmp_path / "sig.json"
    assert main(["significance", "bm25", "hybrid_bm25", "--evaluated", str(evaluated), "--resamples", "200",
                 "--params", str(repo_root / "params.yaml"), "--out", str(out)]) == 0
    rows = {line.split(" | ")[0].strip("| "): line for line in capsys.readouterr().out.splitlines()[2:]}
    assert list(rows) == ["nfcorpus", "npl", "scifact", "macro", "zero_shot_macro"]
    assert "+0.2000 | +0.2000 .. +0.2000 | 0.0%" in rows["scifact"]
    assert "+0.0000 | +0.0000 .. +0.0000 | 100.0%" in rows["npl"]
    doc = json.loads(out.read_text())
    assert doc["results"]["macro"]["diff"] == pytest.approx(0.2 / 3, abs=1e-5)  # the mean of the three datasets' means
    assert doc["results"]["zero_shot_macro"]["diff"] == 0.0  # scifact left out
    assert doc["results"]["scifact"]["per_set"]["scifact"]["queries"] == 4


def test_another_metric_and_a_dataset_subset(evaluated, repo_root, capsys):
    assert main(["significance", "bm25", "hybrid_bm25", "--evaluated", str(evaluated), "--metric", "map",
                 "--datasets", "scifact", "--resamples", "50", "--params", str(repo_root / "params.yaml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and "+0.1000" in lines[2]  # map = ndcg / 2 here; one dataset: no macro rows


def test_a_missing_system_or_metric_is_named(evaluated, repo_root, capsys):
    args = ["--evaluated", str(evaluated), "--params", str(repo_root / "params.yaml"), "--resamples", "10"]
    assert main(["significance", "bm25", "dense", *args]) != 0
    err = capsys.readouterr().err
    assert "per_query/dense/nfcorpus.json" in err and "bm25" in err and "hybrid_bm25" in err
    assert main(["significance", "bm25", "hybrid_bm25", "--metric", "recall@5", *args]) != 0
    assert "has no 'recall@5'" in capsys.readouterr().err
    _write(evaluated, "hybrid_bm25", "npl", [0.4])  # one query fewer than bm25's file
    assert main(["significance", "bm25", "hybrid_bm25", "--datasets", "npl", *args]) != 0
    assert "per_query/hybrid_bm25/npl.json" in capsys.readouterr().err
