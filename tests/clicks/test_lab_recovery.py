"""lab/click_propensity_recovery.py on a small collection: it writes every scenario, and its figures say what
identifies the propensities."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[2] / "lab" / "click_propensity_recovery.py"


def test_the_lab_script_reports_estimates_beside_the_truth_per_scenario(tmp_path):
    spec = importlib.util.spec_from_file_location("click_propensity_recovery", LAB)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        out = tmp_path / "recovery.json"
        assert module.main(["--queries", "100", "--sessions", "4000", "--seeds", "1", "--shares", "0.2",
                            "--em-iterations", "200", "--out", str(out)]) == 0
    finally:
        sys.modules.pop(spec.name, None)
    report = json.loads(out.read_text())
    rows = {r["scenario"]: r for r in report["results"]}
    assert set(rows) == {"1 ranker", "2 rankers", "3 rankers", "1 ranker + RandPair adjacent 0.2",
                         "1 ranker + RandPair top 0.2", "1 ranker, sharp", "3 rankers, sharp",
                         "3 rankers, agreement 0.95"}
    assert report["truth_relative"][:3] == [1.0, 0.8971, 0.7059] and report["command"].endswith(str(out))
    one = rows["1 ranker"]["harvest_harmonic"]
    assert one["identified_ranks_min"] == 1 and one["max_error_worst"] is None  # nothing identified
    assert one["relative_mean"] == [1.0] + [None] * 9
    three = rows["3 rankers"]["harvest_harmonic"]
    assert three["identified_ranks_min"] == 10 and three["max_error_worst"] < 0.1
    assert rows["1 ranker + RandPair top 0.2"]["randpair_ndcg10_loss"] > 0
