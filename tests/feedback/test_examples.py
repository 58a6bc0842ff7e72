"""What training reads from the feedback stage: click positives summed per (query, doc), held-out texts dropped."""

from __future__ import annotations

import json

import pytest

from uniret.data.pseudo_queries import normalise
from uniret.feedback.examples import click_examples, logged_queries


def _write(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _pair(query: str, doc: str, weight: float) -> dict:
    return {"query_key": "k", "query": query, "doc_id": doc, "position": 1, "weight": weight, "ranker": "r"}


def test_clicks_are_summed_per_query_and_doc_scaled_to_the_mean_and_held_out_texts_dropped(tmp_path):
    _write(tmp_path / "pairs" / "ips.jsonl", [_pair("vitamin d", "d1", 1.0), _pair("vitamin d", "d1", 3.0),
                                              _pair("Vitamin  D", "d2", 2.0), _pair("a test query", "d1", 9.0),
                                              _pair("statins", "gone", 1.0)])
    got = click_examples(tmp_path, "ips", held={normalise("A test query")}, known_docs={"d1", "d2"}, scale=2.0)
    assert list(zip(got.texts, got.docs, strict=True)) == [("Vitamin  D", "d2"), ("vitamin d", "d1")]
    # sums 2 and 4, mean 3, scaled to a mean of 2: the arms differ in how weight is spread, not in its total
    assert got.weights == pytest.approx([2 * 2 / 3, 2 * 4 / 3])
    assert got.left_out == {"query text is a held-out (dev or test) query": 1, "doc not in the indexed corpus": 1}
    assert click_examples(tmp_path, "naive", set(), {"d1"}).left_out == {"no pairs file (the feedback stage skipped)": 1}
    with pytest.raises(ValueError, match="kind must be one of"):
        click_examples(tmp_path, "both", set(), set())


def test_logged_queries_drop_held_out_texts_and_a_damaged_line_names_its_file(tmp_path):
    _write(tmp_path / "train_queries.jsonl", [{"text": "vitamin d", "count": 3}, {"text": "A test query", "count": 1}])
    assert logged_queries(tmp_path, {normalise("a test query")}) == ["vitamin d"]
    assert logged_queries(tmp_path / "none", set()) == []
    (tmp_path / "pairs").mkdir()
    (tmp_path / "pairs" / "ips.jsonl").write_text('{"query": "x"\n')
    with pytest.raises(ValueError, match=r"ips.jsonl:1: not JSON"):
        click_examples(tmp_path, "ips", set(), set())


def test_rate_divides_each_pair_s_clicks_by_its_impressions(tmp_path):
    """A head query shown 40 times with 4 noise clicks on d1 no longer outweighs a tail query's one click in
    two impressions on d2: 4/40 against 1/2 (clicks_aggregate: rate)."""
    _write(tmp_path / "pairs" / "ips.jsonl", [*[_pair("head", "d1", 1.0)] * 4, _pair("tail", "d2", 1.0)])
    with pytest.raises(FileNotFoundError, match="shown.jsonl"):
        click_examples(tmp_path, "ips", set(), {"d1", "d2"}, aggregate="rate")
    _write(tmp_path / "pairs" / "shown.jsonl", [{"query": "head", "doc_id": "d1", "shown": 40},
                                                {"query": "tail", "doc_id": "d2", "shown": 2}])
    summed = click_examples(tmp_path, "ips", set(), {"d1", "d2"})
    rate = click_examples(tmp_path, "ips", set(), {"d1", "d2"}, aggregate="rate")
    assert summed.docs == rate.docs == ["d1", "d2"]
    assert summed.weights == pytest.approx([2 * 4 / 5, 2 * 1 / 5])  # sums 4 and 1, mean 2.5
    assert rate.weights == pytest.approx([0.1 / 0.3, 0.5 / 0.3])  # rates 0.1 and 0.5, mean 0.3
    with pytest.raises(ValueError, match="aggregate must be one of"):
        click_examples(tmp_path, "ips", set(), set(), aggregate="mean")
