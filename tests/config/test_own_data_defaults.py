"""Your own data without surprises (issue 55): defaults that follow data.train_dataset, and
settings keyed by the BEIR collections' names that fall back with a warning instead of failing."""

from __future__ import annotations

import logging

import yaml

from uniret.bench.runner import bench_config
from uniret.config import Params, load_params
from uniret.registry.gate import GateInputs, decide, decision_markdown, resolve_gate_config, settings_notes


def _own_data(repo_root, tmp_path, **data):
    """params.yaml with the data section pointed at one folder of your own (`mydocs`)."""
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["data"].update(train_dataset="mydocs", eval_datasets=["mydocs"], **data)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    return load_params(tmp_path / "params.yaml", "cpu")


def test_the_bench_reads_the_train_dataset_unless_told_otherwise(repo_root, tmp_path):
    params = _own_data(repo_root, tmp_path)
    assert params.section("bench").dataset is None
    assert bench_config(params).dataset == "mydocs"
    raw = dict(params.raw, bench={**params.raw["bench"], "dataset": "other"})
    assert bench_config(Params(raw=raw, profile="cpu", path=params.path)).dataset == "other"


def test_dev_datasets_not_evaluated_are_ignored_with_one_warning(repo_root, tmp_path, caplog, monkeypatch):
    from uniret.config import sections

    monkeypatch.setattr(sections, "_WARNED", set())  # once per process: this test's process state
    with caplog.at_level(logging.WARNING, logger="uniret.config"):
        params = _own_data(repo_root, tmp_path)
        data = params.section("data")  # params.yaml's data.dev.datasets: [nfcorpus]
        Params(raw=params.raw, profile="cpu", path=params.path).section("data")  # loaded again: no second line
    assert data.ignored_dev_datasets() == ["nfcorpus"]
    warnings = [r.getMessage() for r in caplog.records if "data.dev.datasets" in r.getMessage()]
    assert len(warnings) == 1 and "nfcorpus not in data.eval_datasets: ignored" in warnings[0]


def test_floors_and_margins_named_for_beir_fall_back_to_the_defaults(repo_root, tmp_path, caplog):
    cfg = resolve_gate_config(_own_data(repo_root, tmp_path))
    notes, warnings = settings_notes(cfg, ["mydocs"])
    assert any("gate.min_score_per_dataset has no entry for mydocs: gate.min_score (0.1) applies" in n for n in notes)
    assert any("gate.regression_margins has no entry for mydocs: gate.regression_margin (0.005)" in n for n in notes)
    assert any(w.startswith("gate.min_score_per_dataset names nfcorpus, scifact, not among the evaluated") for w in warnings)

    cand, m = cfg.candidate_system, cfg.metric
    metrics = {"datasets": {"mydocs": {cand: {m: 0.3}, "bm25": {m: 0.25}}},
               "macro": {cand: {m: 0.3}, "bm25": {m: 0.25}}}
    with caplog.at_level(logging.WARNING, logger="uniret.gate"):
        decision = decide(cfg, GateInputs(metrics=metrics))
    (floor,) = [c for c in decision.checks if c.name == "min_score"]
    assert floor.dataset == "mydocs" and floor.threshold == cfg.min_score and floor.status == "pass"
    assert any("not among the evaluated datasets" in r.getMessage() for r in caplog.records)
    assert "## Per-dataset settings" in decision_markdown(decision) and decision.to_dict()["notes"] == decision.notes

    beir = load_params(repo_root / "params.yaml", "cpu")  # the shipped names on the BEIR data: nothing ignored
    data = beir.section("data")
    assert settings_notes(resolve_gate_config(beir), data.eval_datasets)[1] == []
