"""lab/harvest_across_rankers.py on UBI spans written here: two rankers share each day (a canary beside
production), so only the within-days rule and the rule across all lists identify ranks past the first,
and the bootstrap gives an interval per rank."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

from uniret.clicks.protocol import ClickProtocol

LAB = Path(__file__).resolve().parents[2] / "lab" / "harvest_across_rankers.py"
DAYS = ["2026-12-01", "2026-12-02"]


def _write_spans(log_dir: Path, sessions_per_day: int = 600) -> None:
    """Each day: production shows a query's ten docs in one order, the canary in a rotated order, half the
    searches each; clicks follow ULTRA's protocol on a fixed grade per doc."""
    rng = np.random.default_rng(3)
    protocol = ClickProtocol()
    examination = protocol.examination_curve(10)
    queries = {f"query {q}": [f"d{q}-{i}" for i in range(10)] for q in range(20)}
    grades = {doc: int(rng.integers(0, 3)) for docs in queries.values() for doc in docs}
    for day in DAYS:
        records, events = [], []
        for s in range(sessions_per_day):
            text = f"query {int(rng.integers(0, len(queries)))}"
            canary = s % 2 == 1
            docs = queries[text][3:] + queries[text][:3] if canary else queries[text]
            qid = f"{day}-{s}"
            stamp = f"{day}T10:00:00.000Z"
            records.append({"query_id": qid, "client_id": "c", "user_query": text, "timestamp": stamp,
                            "query_response_hit_ids": docs,
                            "query_attributes": {"bundle_version": "canary" if canary else "production",
                                                 "mode": "hybrid_fast"}})
            for rank, doc in enumerate(docs, 1):
                if rng.random() < examination[rank - 1] * protocol.click_probability(grades[doc]):
                    events.append({"action_name": "click", "query_id": qid, "client_id": "c", "timestamp": stamp,
                                   "event_attributes": {"object": {"object_id": doc}, "position": {"ordinal": rank}}})
        for kind, rows in (("ubi_queries", records), ("ubi_events", events)):
            folder = log_dir / kind / day
            folder.mkdir(parents=True)
            (folder / "part.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_within_days_identifies_what_two_rankers_of_one_day_show_and_the_bootstrap_bounds_each_rank(tmp_path):
    _write_spans(tmp_path / "logs")
    spec = importlib.util.spec_from_file_location("harvest_across_rankers", LAB)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    out = tmp_path / "harvest.json"
    try:
        spec.loader.exec_module(module)
        assert module.main([str(tmp_path / "logs"), *DAYS, "--bootstrap", "8", "--out", str(out)]) == 0
    finally:
        sys.modules.pop(spec.name, None)
    doc = json.loads(out.read_text())
    assert doc["impressions"] == 1200 and set(doc["rankers"]) == {"production/hybrid_fast", "canary/hybrid_fast"}
    # each ranker alone always shows one order: nothing past rank 1 is identified
    alone = doc["within_rankers"]
    assert alone["relative"] == [1.0] + [None] * 9 and alone["weight"] == 0 and alone["mean_abs_error_2_10"] is None
    days = doc["within_days"]
    assert None not in days["relative"] and days["weight"] > 0
    assert doc["across_rankers"]["weight"] >= days["weight"]  # all lists: the same pairs, pooled over the days too
    assert days["max_abs_error"] < 0.5
    boot = days["bootstrap"]
    assert boot["rounds"] == 8 and len(boot["truth_inside"]) == 10 and boot["half_width_max"] > 0
    assert all(lo <= hi for lo, hi in zip(boot["low"], boot["high"], strict=True))
    assert boot["half_width_max"] == round(max(hi - lo for lo, hi in zip(boot["low"][1:], boot["high"][1:],
                                                                         strict=True)) / 2, 4)
    assert boot["low"][0] == boot["high"][0] == 1.0  # rank 1 is the unit
