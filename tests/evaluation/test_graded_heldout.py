"""Graded nDCG on real-valued click judgments, and the held-out day's files read with clear errors."""

from __future__ import annotations

import json
import math

import pytest

from uniret.core.errors import DataError
from uniret.evaluation.graded import graded_ndcg, judged_share, parse_ndcg_cutoff
from uniret.evaluation.heldout import (
    HELDOUT_QUERIES,
    JUDGMENTS,
    read_graded_qrels,
    read_heldout,
    read_queries,
)


def test_graded_ndcg_uses_the_judgment_as_a_linear_gain():
    qrels = {"q": {"a": 0.9, "b": 0.3, "c": 0.0}, "empty": {"x": 0.0}, "missed": {"z": 1.0}}
    run = {"q": {"b": 3.0, "a": 2.0, "d": 1.0}}
    got = graded_ndcg(qrels, run, 10)
    ideal = 0.9 + 0.3 / math.log2(3)
    assert got["q"] == pytest.approx((0.3 + 0.9 / math.log2(3)) / ideal)
    assert got["missed"] == 0.0  # judged, no results: 0
    assert "empty" not in got  # no positive judgment: nDCG undefined, left out
    assert graded_ndcg(qrels, {"q": {"a": 2.0, "b": 1.0}}, 10)["q"] == pytest.approx(1.0)
    assert graded_ndcg(qrels, {"q": {"b": 2.0, "a": 1.0}}, 1)["q"] == pytest.approx(0.3 / 0.9)  # cut at k


def test_the_condensed_list_drops_unjudged_documents_before_the_cut():
    # the logs judged a (clicked), b (shown, never clicked) and c; the run ranks two documents nobody was
    # shown above them: scored as 0 on the full list, removed from the condensed one (Sakai 2007)
    qrels = {"q": {"a": 1.0, "b": 0.0, "c": 0.5}}
    run = {"q": {"new1": 5.0, "new2": 4.0, "b": 3.0, "a": 2.0, "c": 1.0}}
    ideal = 1.0 + 0.5 / math.log2(3)
    assert graded_ndcg(qrels, run, 10)["q"] == pytest.approx((1.0 / math.log2(5) + 0.5 / math.log2(6)) / ideal)
    assert graded_ndcg(qrels, run, 10, condensed=True)["q"] == pytest.approx(
        (1.0 / math.log2(3) + 0.5 / math.log2(4)) / ideal)  # b stays: judged 0 is a judgment
    assert graded_ndcg(qrels, run, 2, condensed=True)["q"] == pytest.approx((1.0 / math.log2(3)) / ideal)
    assert judged_share(qrels, run, 4) == {"q": 0.5}  # new1, new2, b, a: two of four judged
    assert judged_share(qrels, run, 10) == {"q": 0.3}  # a shorter run's empty slots count as unjudged


def test_only_ndcg_at_k_is_graded():
    assert parse_ndcg_cutoff("ndcg@10") == 10
    assert parse_ndcg_cutoff("condensed_ndcg@5") == 5
    for bad in ("mrr@10", "ndcg", "ndcg@0", "ndcg@x", "condensed_mrr@10"):
        with pytest.raises(ValueError, match="ndcg@<k>"):
            parse_ndcg_cutoff(bad)


def test_bad_qrels_lines_name_file_line_and_field(tmp_path):
    path = tmp_path / "qrels.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t0.5\nq1\td2\t-1\n")
    with pytest.raises(DataError, match=r"qrels.tsv:3 \[score\]: expected a finite number >= 0, got '-1'"):
        read_graded_qrels(path)
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    with pytest.raises(DataError, match=r"qrels.tsv:2: expected 3 tab-separated fields, got 2"):
        read_graded_qrels(path)
    path.write_text("q1\td1\t0.5\nq1\td1\t0.25\n")
    with pytest.raises(DataError, match=r"qrels.tsv:2 \[corpus-id\]: \(q1, d1\) judged twice"):
        read_graded_qrels(path)
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t0.5\nq2\td1\t2\n")
    assert read_graded_qrels(path) == {"q1": {"d1": 0.5}, "q2": {"d1": 2.0}}


def test_bad_query_lines_name_file_line_and_field(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_text('{"_id": "q1", "text": "a"}\n{"_id": "q2"}\n')
    with pytest.raises(DataError, match=r"queries.jsonl:2 \[text\]: expected a non-empty string"):
        read_queries(path)
    path.write_text('{"_id": "q1", "text": "a"}\nnot json\n')
    with pytest.raises(DataError, match=r"queries.jsonl:2: not JSON"):
        read_queries(path)


def _feedback(tmp_path, metrics: dict, queries: str = '{"_id": "q1", "text": "a"}\n',
              qrels: str = "query-id\tcorpus-id\tscore\nq1\td1\t0.5\n"):
    folder = tmp_path / "feedback"
    (folder / "heldout" / "qrels").mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"stage": "feedback", "metrics": metrics}))
    (folder / HELDOUT_QUERIES).write_text(queries)
    for rel in JUDGMENTS.values():
        (folder / rel).write_text(qrels)
    return folder


OK = {"status": "ok", "window": {"train": ["2026-12-03"], "heldout": "2026-12-04"}}


def test_the_held_out_day_or_why_there_is_none(tmp_path):
    assert read_heldout(tmp_path / "absent") == (None, "no feedback stage output (artifacts/feedback has no manifest)")
    skipped = _feedback(tmp_path / "a", {"status": "skipped: no logs (feedback.log_dir is null)"})
    assert read_heldout(skipped) == (None, "feedback stage skipped: no logs (feedback.log_dir is null)")
    no_day = _feedback(tmp_path / "b", {"status": "ok", "window": {"train": ["2026-12-03"], "heldout": None}})
    assert read_heldout(no_day) == (None, "the feedback window has no held-out day")
    unjudged = _feedback(tmp_path / "c", OK, qrels="query-id\tcorpus-id\tscore\n")
    assert read_heldout(unjudged) == (None, "the held-out day 2026-12-04 has no click-derived judgment")
    day, why = read_heldout(_feedback(tmp_path / "d", OK))
    assert why == "" and day.day == "2026-12-04" and day.queries == {"q1": "a"}
    assert day.judgments == {name: {"q1": {"d1": 0.5}} for name in ("click_model", "coec", "ips")}


def test_judgments_of_an_unknown_query_are_an_error(tmp_path):
    folder = _feedback(tmp_path, OK, qrels="query-id\tcorpus-id\tscore\nq9\td1\t0.5\n")
    with pytest.raises(DataError, match=r"click_model.tsv \[query-id\]: 1 judged queries missing from"):
        read_heldout(folder)
    (folder / HELDOUT_QUERIES).unlink()
    with pytest.raises(DataError, match=r"heldout/queries.jsonl: missing from the feedback stage's output"):
        read_heldout(folder)


def test_the_report_shows_both_sides_or_why_not():
    from uniret.evaluation.regression import newest_traffic_lines

    scores = {"click_model": {"ndcg@10": 0.25, "condensed_ndcg@10": 0.75, "queries": 8},
              "coec": {"ndcg@10": 0.5, "condensed_ndcg@10": 1.0, "queries": 7}}
    section = {"status": "scored", "day": "2026-12-04", "queries": 24, "metrics": ["ndcg@10", "condensed_ndcg@10"],
               "candidate": {"system": "uni", "scores": scores},
               "production": {"status": "other_corpus", "version": "v1", "reason": "production v1 indexes 'x'"}}
    lines = newest_traffic_lines(section)
    assert ("| system | click_model ndcg@10 | click_model condensed_ndcg@10 | coec ndcg@10 | coec condensed_ndcg@10 "
            "| queries |") in lines
    assert "| candidate (uni) | 0.2500 | 0.7500 | 0.5000 | 1.0000 | 8/7 |" in lines
    assert "Production not scored: production v1 indexes 'x'." in lines
    section["production"] = {"status": "scored", "version": "v1", "system": "uni", "scores": scores}
    assert "| production (v1, uni) | 0.2500 | 0.7500 | 0.5000 | 1.0000 | 8/7 |" in newest_traffic_lines(section)
    assert "Not scored: feedback stage skipped: no logs." in newest_traffic_lines(
        {"status": "skipped", "reason": "feedback stage skipped: no logs"})
    assert newest_traffic_lines(None) == []
