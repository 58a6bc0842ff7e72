"""Negatives sampled from a ranking: positives excluded, depth respected, seeded and stable."""

from __future__ import annotations

import pytest

from uniret.core.errors import DataError
from uniret.data.negatives import iter_negatives, positives_of, sample_negatives, write_negatives

DEPTH, PER_QUERY = 20, 5


def _run(qids):
    # 50 ranked docs per query; positives p0/p1 sit inside the top DEPTH
    run = {}
    for qid in qids:
        docs = [f"d{i}" for i in range(50)]
        docs[3], docs[10] = "p0", "p1"
        run[qid] = {did: float(100 - rank) for rank, did in enumerate(docs)}
    return run


QRELS = {
    "q1": {"p0": 1, "p1": 2, "d5": 0},  # d5 judged non-relevant: may be a negative
    "q2": {"p0": 1, "far": 1},  # "far" not retrieved
    "q3": {"d1": 0},  # no positive: no record
}
QUERIES = {"q1": "first", "q2": "second", "q3": "third"}


def test_negatives_exclude_positives_and_stay_in_depth():
    run = _run(QRELS)
    records = sample_negatives(run, QRELS, QUERIES, DEPTH, PER_QUERY, seed=1)
    assert [r.query_id for r in records] == ["q1", "q2"]
    top = {qid: sorted(docs, key=docs.get, reverse=True)[:DEPTH] for qid, docs in run.items()}
    for r in records:
        assert r.query == QUERIES[r.query_id]
        assert len(r.negatives) == PER_QUERY == len(set(r.negatives))
        assert not set(r.negatives) & set(r.positives)
        assert set(r.negatives) <= set(top[r.query_id])
        assert r.negatives == sorted(r.negatives, key=top[r.query_id].index)  # rank order
    assert records[0].positives == ["p1", "p0"]  # graded: most relevant first
    assert records[1].positives == ["far", "p0"]


def test_sampling_is_seeded_and_independent_of_other_queries():
    run = _run(QRELS)
    a = sample_negatives(run, QRELS, QUERIES, DEPTH, PER_QUERY, seed=7)
    b = sample_negatives(run, QRELS, QUERIES, DEPTH, PER_QUERY, seed=7)
    assert a == b
    alone = sample_negatives(run, {"q2": QRELS["q2"]}, QUERIES, DEPTH, PER_QUERY, seed=7)
    assert alone[0] == a[1]
    others = [sample_negatives(run, QRELS, QUERIES, DEPTH, PER_QUERY, seed=s)[0].negatives for s in range(8)]
    assert len({tuple(n) for n in others}) > 1  # the seed matters


def test_short_rankings_give_all_candidates():
    run = {"q1": {"p0": 3.0, "x": 2.0, "y": 1.0}}
    (record,) = sample_negatives(run, {"q1": {"p0": 1}}, QUERIES, DEPTH, PER_QUERY, seed=0)
    assert record.negatives == ["x", "y"]
    assert positives_of({"a": 0, "b": 2, "c": 1}) == ["b", "c"]


def test_jsonl_round_trip_and_bad_line(tmp_path):
    records = sample_negatives(_run(QRELS), QRELS, QUERIES, DEPTH, PER_QUERY, seed=3)
    path = write_negatives(tmp_path / "negatives.jsonl", records)
    assert list(iter_negatives(path)) == records
    with path.open("a") as fh:
        fh.write('{"query_id": "q9", "query": "x", "positives": ["a"], "negatives": "b"}\n')
    with pytest.raises(DataError, match=r"negatives.jsonl:3 \[negatives\]"):
        list(iter_negatives(path))
