"""score_systems: per-dataset means, macro and zero-shot macro averages, coverage checks."""

from __future__ import annotations

import pytest

from uniret.evaluation.scoring import score_systems

QRELS = {
    "train": {"q1": {"a": 1}, "q2": {"b": 1}},
    "zs1": {"q1": {"a": 1}},
    "zs2": {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}},
}
# "good" finds the relevant doc at rank 1 for: train 2/2, zs1 1/1, zs2 1/4 queries
GOOD = {
    "train": {"q1": {"a": 1.0}, "q2": {"b": 1.0}},
    "zs1": {"q1": {"a": 1.0}},
    "zs2": {"q1": {"a": 1.0}, "q2": {"x": 1.0}},
}
# "half" ranks the relevant doc 2nd for every query of every dataset
HALF = {ds: {q: {"x": 2.0, next(iter(rel)): 1.0} for q, rel in qrels.items()} for ds, qrels in QRELS.items()}


def test_macro_and_zero_shot_macro():
    scores = score_systems(QRELS, {"good": GOOD, "half": HALF}, ["mrr@10", "map"], True, train_dataset="train")
    doc = scores.doc
    assert doc["num_queries"] == {"train": 2, "zs1": 1, "zs2": 4}
    assert doc["datasets"]["zs2"]["good"]["mrr@10"] == pytest.approx(0.25)  # 1 of 4 queries (3 score 0)
    assert doc["macro"]["good"]["mrr@10"] == pytest.approx((1.0 + 1.0 + 0.25) / 3)
    assert doc["zero_shot_macro"]["good"]["mrr@10"] == pytest.approx((1.0 + 0.25) / 2)
    assert doc["macro"]["half"] == {"mrr@10": pytest.approx(0.5), "map": pytest.approx(0.5)}
    assert scores.per_query["good"]["zs2"]["q3"] == {"mrr@10": 0.0, "map": 0.0}


def test_no_zero_shot_datasets_gives_empty_zero_shot_macro():
    qrels = {"train": QRELS["train"]}
    doc = score_systems(qrels, {"good": {"train": GOOD["train"]}}, ["mrr@10"], True, "train").doc
    assert doc["zero_shot_macro"] == {}
    assert doc["macro"]["good"]["mrr@10"] == 1.0


def test_system_missing_a_dataset_is_an_error():
    runs = {"good": {k: v for k, v in GOOD.items() if k != "zs2"}}
    with pytest.raises(ValueError, match="'good' has no run for eval dataset"):
        score_systems(QRELS, runs, ["mrr@10"], True, "train")
