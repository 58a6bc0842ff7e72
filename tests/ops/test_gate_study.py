"""The gate error-rate study: raw per-query files in, both rules' false blocks and misses out."""

from __future__ import annotations

import json

import numpy as np
import pytest

from uniret.config.gate import GateConfig
from uniret.core.errors import DataError
from uniret.ops.gate_study import add_candidate, load_candidates, render, study, write_study

SIZES = {"scifact": 300, "nfcorpus": 323, "medline": 30}


def _evaluated(tmp_path, name: str, base: dict, noise: float, shift: dict[str, float], seed: int):
    """An evaluate output folder whose hybrid_fast scores are `base` + noise - shift."""
    rng = np.random.default_rng(seed)
    out = tmp_path / "evaluated" / name
    datasets = {}
    for ds, rows in base.items():
        values = {q: float(v + rng.normal(0, noise) - shift.get(ds, 0.0)) for q, v in rows.items()}
        (out / "per_query" / "hybrid_fast").mkdir(parents=True, exist_ok=True)
        (out / "per_query" / "hybrid_fast" / f"{ds}.json").write_text(
            json.dumps({q: {"ndcg@10": v, "recall@100": 1.0} for q, v in values.items()}))
        datasets[ds] = {"hybrid_fast": {"ndcg@10": float(np.mean(list(values.values())))}}
    (out / "metrics.json").write_text(json.dumps({"datasets": datasets}))
    return out


@pytest.fixture
def root(tmp_path):
    rng = np.random.default_rng(0)
    base = {ds: {f"q{i}": float(v) for i, v in enumerate(rng.uniform(0, 1, n))} for ds, n in SIZES.items()}
    root = tmp_path / "gate"
    made = [("seed-1", "equal", {}), ("seed-2", "equal", {}), ("seed-3", "equal", {}),
            ("shuffled", "worse", {"scifact": 0.04, "nfcorpus": 0.03, "medline": 0.03}),
            ("trained", "better", {"scifact": -0.05, "nfcorpus": -0.03})]
    for i, (name, kind, shift) in enumerate(made):
        add_candidate(root, name, kind, f"made with shift {shift}", _evaluated(tmp_path, name, base, 0.03, shift, i),
                      "hybrid_fast", "ndcg@10")
    return root


def _cfg() -> GateConfig:
    return GateConfig(candidate_system="hybrid_fast", regression_resamples=500)


def test_the_study_gates_every_pair_with_both_rules(root):
    doc = study(root, _cfg(), "scifact")
    assert doc["datasets"] == ["medline", "nfcorpus", "scifact"] and doc["zero_shot"] == ["medline", "nfcorpus"]
    paired, threshold = doc["summary"]["paired"], doc["summary"]["threshold"]
    assert paired["equal_pairs"] == 6 and paired["false_blocks"] == 0  # 3 equal retrains, each way
    assert paired["worse_pairs"] == 3 and paired["worse_blocked"] == 3
    # the trained candidate against each equal one, and each equal one against the shuffled production
    assert paired["better_pairs"] == 3 + 3 and paired["better_blocked"] == 0
    recovered = [o for o in doc["other_pairs"] if o["production"] == "shuffled"]
    assert len(recovered) == 3 and all(o["kind"] == "better" and o["diff"]["scifact"] > 0.02 for o in recovered)
    assert threshold["worse_blocked"] == 3
    worse = next(o for o in doc["other_pairs"] if o["candidate"] == "shuffled")
    assert worse["diff"]["scifact"] == pytest.approx(-0.04, abs=0.01)
    assert set(worse["paired"]["by"]) >= {"scifact"}
    # every set's detectable loss under the paired rule, and the pooled one; medline's 30 queries need more
    found = doc["detectable_loss_95"]
    assert set(found) == {"medline", "nfcorpus", "scifact", "pooled"} and "threshold" not in found["pooled"]
    assert found["medline"]["paired"] > found["scifact"]["paired"] > 0.005


def test_the_summary_is_regenerated_from_the_raw_files(root):
    cfg = _cfg()
    write_study(root, study(root, cfg, "scifact"))
    written = json.loads((root / "study.json").read_text())
    assert written == json.loads(json.dumps(study(root, cfg, "scifact")))
    assert (root / "study.md").read_text() == render(written)
    listed, scores = load_candidates(root)
    assert listed["seed-1"]["kind"] == "equal" and len(scores["seed-1"]["medline"]) == 30


def test_bad_candidates_are_named(root, tmp_path):
    with pytest.raises(ValueError, match="kind must be one of"):
        add_candidate(root, "x", "sideways", "", tmp_path, "hybrid_fast", "ndcg@10")
    listed = json.loads((root / "candidates.json").read_text())
    listed["seed-1"]["kind"] = "sideways"
    (root / "candidates.json").write_text(json.dumps(listed))
    with pytest.raises(DataError, match=r"seed-1.kind"):
        load_candidates(root)


def test_the_retraining_noise_sets_a_margin_per_set(root):
    from uniret.ops.gate_study import retrain_noise

    listed, scores = load_candidates(root)
    equal = {n: scores[n] for n, e in listed.items() if e["kind"] == "equal"}
    noise = retrain_noise(equal, ["medline", "nfcorpus", "scifact"], ["medline", "nfcorpus"])
    means = [np.mean(list(equal[n]["medline"].values())) for n in sorted(equal)]
    assert noise["medline"]["sd"] == pytest.approx(np.std(means, ddof=1), abs=1e-5)
    assert noise["medline"]["margin"] >= 1.645 * np.sqrt(2) * noise["medline"]["sd"]
    assert noise["medline"]["margin"] - 1.645 * np.sqrt(2) * noise["medline"]["sd"] < 0.001
    # 30 queries with per-query noise 0.03: their means spread more than 323 queries' means
    assert noise["medline"]["sd"] > noise["nfcorpus"]["sd"] and set(noise) >= {"zero_shot_macro"}
    assert retrain_noise(dict(list(equal.items())[:2]), ["medline"], []) == {}
    assert "## Retraining noise" in render(study(root, _cfg(), "scifact"))
