"""evaluate_run: hand-checked values, MRR truncation, recall, self-hits, missing queries."""

from __future__ import annotations

import math

import pytest

from uniret.evaluation.metrics import evaluate_run, mean_over, parse_metric, trec_order


def test_ndcg_at_10_matches_hand_computation_with_graded_relevance():
    qrels = {"q1": {"d1": 2, "d2": 1, "d3": 1, "d9": 0}}
    run = {"q1": {"d4": 5.0, "d1": 4.0, "d5": 3.0, "d2": 2.0}}  # d3 is never retrieved
    # trec_eval's nDCG uses the graded score as a linear gain and log2(rank + 1) as discount.
    # DCG@10  = 0/log2(2) + 2/log2(3) + 0/log2(4) + 1/log2(5)
    #         = 0 + 2/1.5849625 + 0 + 1/2.3219281 = 1.2618595 + 0.4306766 = 1.6925361
    # IDCG@10 (ideal order d1, d2, d3; d9 has grade 0) = 2/log2(2) + 1/log2(3) + 1/log2(4)
    #         = 2 + 0.6309298 + 0.5 = 3.1309298
    # nDCG@10 = 1.6925361 / 3.1309298 = 0.5405858
    _, agg = evaluate_run(qrels, run, ["ndcg@10"])
    assert agg["ndcg@10"] == pytest.approx(0.5405858, abs=1e-6)
    assert agg["ndcg@10"] == pytest.approx((2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3) + 0.5))


def test_mrr_at_10_truncates_the_run():
    qrels = {"q1": {"rel": 1}}
    at_11 = {f"n{i:02d}": 100.0 - i for i in range(10)} | {"rel": 50.0}  # rel is ranked 11th
    at_10 = {f"n{i:02d}": 100.0 - i for i in range(9)} | {"rel": 50.0}  # rel is ranked 10th
    assert evaluate_run(qrels, {"q1": at_11}, ["mrr@10"])[1]["mrr@10"] == 0.0
    assert evaluate_run(qrels, {"q1": at_10}, ["mrr@10"])[1]["mrr@10"] == pytest.approx(0.1)
    # the cutoff is the metric's own: at depth 100 the 11th rank counts
    assert evaluate_run(qrels, {"q1": at_11}, ["mrr@100"])[1]["mrr@100"] == pytest.approx(1 / 11)


def test_mrr_truncation_breaks_ties_like_trec_eval():
    # 11 docs with one score: trec_eval orders ties by doc id descending, so "a" (relevant) is 11th.
    qrels = {"q1": {"a": 1}}
    run = {"q1": {doc: 1.0 for doc in "abcdefghijk"}}
    assert [d for d, _ in trec_order(run["q1"])][-1] == "a"
    _, agg = evaluate_run(qrels, run, ["mrr@10", "ndcg@10"])
    assert agg == {"mrr@10": 0.0, "ndcg@10": 0.0}  # both agree that "a" is outside the top 10


def test_recall_at_100_and_1000():
    qrels = {"q1": {"r1": 1, "r2": 1, "r3": 2, "r4": 1}}
    ranking = [f"n{i:04d}" for i in range(1200)]
    # relevant docs at ranks 1, 50, 100 (inside the top 100) and 150 (inside the top 1000)
    for doc, rank in (("r1", 1), ("r2", 50), ("r3", 100), ("r4", 150)):
        ranking.insert(rank - 1, doc)
    run = {"q1": {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}}
    assert [d for d, _ in trec_order(run["q1"])].index("r3") == 99
    _, agg = evaluate_run(qrels, run, ["recall@100", "recall@1000"])
    assert agg["recall@100"] == pytest.approx(3 / 4)
    assert agg["recall@1000"] == pytest.approx(1.0)


def test_ignore_identical_ids_drops_self_hits():
    qrels = {"q1": {"d1": 1}}
    run = {"q1": {"q1": 9.0, "d1": 5.0}}  # the query itself is in the corpus and ranks first
    assert evaluate_run(qrels, run, ["mrr@10"], ignore_identical_ids=True)[1]["mrr@10"] == 1.0
    assert evaluate_run(qrels, run, ["mrr@10"], ignore_identical_ids=False)[1]["mrr@10"] == 0.5


def test_judged_query_without_results_scores_zero_and_counts():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
    run = {"q1": {"d1": 1.0}, "q3": {"q3": 1.0}, "unjudged": {"d1": 1.0}}  # q3 has only a self-hit
    per_query, agg = evaluate_run(qrels, run, ["ndcg@10", "map"])
    assert set(per_query) == {"q1", "q2", "q3"}  # unjudged query ignored
    assert per_query["q2"] == {"ndcg@10": 0.0, "map": 0.0}
    assert per_query["q3"] == {"ndcg@10": 0.0, "map": 0.0}
    assert agg == {"ndcg@10": pytest.approx(1 / 3), "map": pytest.approx(1 / 3)}


def test_mean_over_is_unweighted():
    tables = [{"ndcg@10": 0.2, "map": 0.1}, {"ndcg@10": 0.6, "map": 0.5}]
    assert mean_over(tables, ["ndcg@10", "map"]) == {"ndcg@10": pytest.approx(0.4), "map": pytest.approx(0.3)}
    assert mean_over([], ["ndcg@10"]) == {}


@pytest.mark.parametrize(
    "name, measure, key, truncate",
    [
        ("ndcg@10", "ndcg_cut.10", "ndcg_cut_10", None),
        ("recall@1000", "recall.1000", "recall_1000", None),
        ("mrr@10", "recip_rank", "recip_rank", 10),
        ("map", "map", "map", None),
        ("map@100", "map_cut.100", "map_cut_100", None),
        ("precision@5", "P.5", "P_5", None),
    ],
)
def test_parse_metric(name, measure, key, truncate):
    spec = parse_metric(name)
    assert (spec.name, spec.measure, spec.key, spec.truncate) == (name, measure, key, truncate)


@pytest.mark.parametrize("bad", ["ndcg", "mrr", "ndcg@0", "ndcg_cut_10", "bleu@4", "ndcg@ten"])
def test_parse_metric_rejects(bad):
    with pytest.raises(ValueError, match="allowed: ndcg@k"):
        parse_metric(bad)


def test_empty_qrels_is_an_error():
    with pytest.raises(ValueError, match="no judged queries"):
        evaluate_run({}, {"q1": {"d1": 1.0}}, ["ndcg@10"])
