"""The loop report's zero-shot check: the gate's paired rule on the other sets, last night against night 0."""

from __future__ import annotations

import json

import numpy as np

from uniret.config.gate import GateConfig
from uniret.loop.report import zero_shot_check


def _night(work, night: int, sets: dict[str, np.ndarray]) -> None:
    folder = work / "nights" / str(night) / "per_query"
    folder.mkdir(parents=True)
    for name, values in sets.items():
        doc = {f"q{i}": {"ndcg@10": float(v)} for i, v in enumerate(values)}
        (folder / f"{name}.json").write_text(json.dumps(doc))


def test_a_loss_on_one_zero_shot_set_is_outside_the_margins_and_equal_nights_are_within(tmp_path):
    rng = np.random.default_rng(3)
    base = {name: rng.uniform(0.0, 1.0, size=300) for name in ("nfcorpus", "scifact", "npl")}
    gate = GateConfig(regression_margins={"scifact": 0.009, "npl": 0.014}, pooled_margin=0.005)

    same = tmp_path / "same"
    _night(same, 0, base)
    _night(same, 3, {**base, "nfcorpus": base["nfcorpus"] + 0.2})  # the domain's own gain is not this check's
    check = zero_shot_check(same, 3, "nfcorpus", gate)
    assert check["sets"] == ["npl", "scifact"] and check["within_margins"]
    assert check["pooled"]["diff"] == 0.0 and check["per_set"]["scifact"]["margin"] == 0.009

    worse = tmp_path / "worse"
    _night(worse, 0, base)
    _night(worse, 3, {**base, "scifact": base["scifact"] - 0.05})
    check = zero_shot_check(worse, 3, "nfcorpus", gate)
    assert not check["within_margins"] and check["per_set"]["scifact"]["worse"] and not check["per_set"]["npl"]["worse"]
    assert check["pooled"]["diff"] == -0.025 and check["pooled"]["worse"]


def test_no_kept_scores_gives_no_check(tmp_path):
    assert zero_shot_check(tmp_path, 2, "nfcorpus", GateConfig()) is None
