"""The loop's report holds the gate's newest-traffic check against the simulator's truth.

A night folder is written with the evaluate stage's own functions (uniret.evaluation.newest_traffic):
production showed a, b, c and the day's users clicked a; the candidate puts a document production never
showed, the one the traffic's qrels grade highest, above them. The truth finds the candidate better; the
full-list check scores the new document 0 and blocks it; the condensed list passes it.
"""

from __future__ import annotations

import pytest

from uniret.config.gate import GateConfig, NewestTrafficConfig
from uniret.evaluation import newest_traffic as traffic
from uniret.evaluation.heldout import HeldoutDay
from uniret.loop import traffic_truth
from uniret.stages import feedback as feedback_stage
from uniret.utils.files import atomic_write_text

QUERIES = 40


def _run(order: list[str]) -> dict[str, float]:
    return {d: float(len(order) - r) for r, d in enumerate(order)}


def _night(keep, candidate_order: list[str]):
    """nights/<n>/ as the loop keeps it; returns the dataset's qrels and texts (what drew the clicks)."""
    texts = {f"q{i}": f"query text {i}" for i in range(QUERIES)}
    qrels = {f"q{i}": {"new": 2, "a": 1} for i in range(QUERIES)}
    keys = {f"k{i}": texts[f"q{i}"] for i in range(QUERIES)}
    judged = {k: {"a": 0.8, "b": 0.1, "c": 0.05} for k in keys}
    # ips judges a shown-never-clicked d too: on the full list the candidate leaves it out, as production ranks it 4th
    day = HeldoutDay("2026-12-04", keys, {"click_model": judged, "coec": judged,
                                          "ips": {k: {**v, "d": 0.0} for k, v in judged.items()}})
    production = {k: _run(["a", "b", "c", "d"]) for k in keys}
    candidate = {k: _run(candidate_order) for k in keys}
    out = keep / "evaluate_out"
    for system, run in (("hybrid_fast", candidate), (traffic.PRODUCTION_SYSTEM, production)):
        traffic.write_scores(out, system, traffic.score_run(day, run), run)
    (out / traffic.NEWEST_TRAFFIC).rename(keep / traffic_truth.NEWEST)
    atomic_write_text(keep / traffic_truth.HELDOUT / "queries.jsonl",
                      "".join(f'{{"_id": "{k}", "text": "{t}"}}\n' for k, t in keys.items()))
    feedback_stage.write_qrels(keep / traffic_truth.HELDOUT / "qrels" / "click_model.tsv",
                               {(k, d): v for k, docs in judged.items() for d, v in docs.items()})
    return qrels, texts


GATE = GateConfig(newest_traffic=NewestTrafficConfig(margin=0.01))


def test_a_new_relevant_document_is_blocked_by_the_full_list_and_passed_by_the_condensed_one(tmp_path):
    qrels, texts = _night(tmp_path, ["new", "a", "b", "c"])
    got = traffic_truth.night_comparison(tmp_path, qrels, texts, GATE)
    assert got["candidate_system"] == "hybrid_fast" and got["judgments"] == "click_model"
    assert got["truth"]["diff"] > 0.2 and not got["truth"]["worse"] and got["truth"]["queries"] == QUERIES
    assert got["ndcg@10"]["diff"] < -0.2 and got["ndcg@10"]["worse"]
    assert got["condensed_ndcg@10"]["diff"] == pytest.approx(0.0) and not got["condensed_ndcg@10"]["worse"]
    agree = traffic_truth.agreement([{"night": 2, **got}])
    assert agree["ndcg@10"] == {"nights": 1, "agree": 0, "blocked_not_worse": 1, "passed_worse": 0}
    assert agree["condensed_ndcg@10"] == {"nights": 1, "agree": 1, "blocked_not_worse": 0, "passed_worse": 0}
    # every judgment set the night kept, paired on the same runs; the gate's own is the one above
    assert set(got["by_judgments"]) == {"click_model", "coec", "ips"}
    assert got["by_judgments"]["click_model"] == {m: got[m] for m in traffic.METRICS}
    by = traffic_truth.agreements([{"night": 2, **got}])
    assert by["ips"]["ndcg@10"]["blocked_not_worse"] == 1 and by["ips"]["condensed_ndcg@10"]["agree"] == 1
    lines = "\n".join(traffic_truth.markdown({"nights": [{"night": 2, **got}], "agreement": agree, "by_judgments": by}))
    assert "| 2 | +0." in lines and "**blocks** | +0.0000" in lines
    assert "| ips | condensed_ndcg@10 | 1 of 1 | 0 | 0 |" in lines and "| coec | ndcg@10 | 0 of 1 | 1 | 0 |" in lines
    on_coec = GateConfig(newest_traffic=NewestTrafficConfig(judgments="coec", margin=0.01))
    assert traffic_truth.night_comparison(tmp_path, qrels, texts, on_coec)["judgments"] == "coec"
    assert "ndcg@10: the same verdict as the truth on 0 of 1 nights; blocked a candidate the truth does not " \
           "find worse on 1" in lines


def test_a_candidate_that_buries_the_clicked_document_is_blocked_by_both(tmp_path):
    # the clicked, truly relevant a falls out of the top 10 behind unshown, unjudged documents
    qrels, texts = _night(tmp_path, [f"x{i}" for i in range(10)] + ["b", "c", "a"])
    got = traffic_truth.night_comparison(tmp_path, qrels, texts, GATE)
    assert got["truth"]["worse"] and got["ndcg@10"]["worse"]
    # the condensed list does not see what stands above a: it ranks b, c, a and still finds it worse
    assert got["condensed_ndcg@10"]["worse"]


def test_a_night_without_kept_newest_traffic_is_left_out(tmp_path):
    assert traffic_truth.night_comparison(tmp_path, {}, {}, GATE) is None


def test_a_judgment_set_that_judged_no_query_is_left_out_of_that_night(tmp_path):
    qrels, texts = _night(tmp_path, ["new", "a", "b", "c"])
    empty = {traffic.PRODUCTION_SYSTEM: {}, traffic_truth.CANDIDATE: {}}
    assert traffic_truth.compare_checks(empty, GATE) == {}
    for system in ("hybrid_fast", traffic.PRODUCTION_SYSTEM):  # ips judged nothing that day
        (tmp_path / traffic_truth.NEWEST / "per_query" / system / "ips.json").write_text("{}")
    got = traffic_truth.night_comparison(tmp_path, qrels, texts, GATE)
    assert got["by_judgments"]["ips"] == {} and got["by_judgments"]["coec"]
    assert traffic_truth.agreements([{"night": 2, **got}])["ips"]["ndcg@10"]["nights"] == 0
    on_ips = GateConfig(newest_traffic=NewestTrafficConfig(judgments="ips", margin=0.01))
    assert traffic_truth.night_comparison(tmp_path, qrels, texts, on_ips) is None
