"""`uniret nightly`: exit codes for promoted / blocked / failed, and the lock between two processes."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from uniret.config.recipes import EVAL_MODES
from uniret.ops.nightly import EXIT_BLOCKED, EXIT_FAILED, EXIT_LOCKED, EXIT_PROMOTED, run_nightly
from uniret.registry.pointer import read_pointer
from uniret.runtime import make_context

PY = shlex.quote(sys.executable)
LOCK_WAIT_S = 120  # hang guard while the first process starts (not a timing assertion)


def _candidate() -> str:
    """The system the gate judges by default: the mode the default recipe serves."""
    from uniret.config import load_params
    from uniret.registry.gate import resolve_gate_config

    return resolve_gate_config(load_params(Path(__file__).resolve().parents[2] / "params.yaml", "cpu")).candidate_system


def _metrics(cand_sci: float, cand_nf: float) -> dict:
    cand, bm25, name = {"scifact": cand_sci, "nfcorpus": cand_nf}, {"scifact": 0.66, "nfcorpus": 0.32}, _candidate()
    return {
        "datasets": {ds: {name: {"ndcg@10": cand[ds]}, "bm25": {"ndcg@10": bm25[ds]}} for ds in cand},
        "macro": {name: {"ndcg@10": sum(cand.values()) / 2}, "bm25": {"ndcg@10": sum(bm25.values()) / 2}},
    }


def _upstream(artifacts: Path, metrics: dict) -> None:
    for stage in ("validate", "index", "bench", "evaluate"):
        (artifacts / stage).mkdir(parents=True, exist_ok=True)
        (artifacts / stage / "manifest.json").write_text(json.dumps({"inputs": {"x": "h"}}))
    (artifacts / "evaluate" / "metrics.json").write_text(json.dumps(metrics))
    (artifacts / "index" / "bundle").mkdir(exist_ok=True)
    (artifacts / "index" / "bundle" / "manifest.json").write_text(json.dumps({"metrics": {"mean_active_terms_doc": 50}}))
    # the bench stage's figures: every mode a recipe may serve, well inside the cpu budgets
    bench = {"modes": {mode: {"p50_ms": 1.2, "p95_ms": 20.0} for mode in (*EVAL_MODES, "bm25")},
             "bytes_per_doc_dense": 1536.0,
             "bytes_per_doc_sparse": 900.0}
    (artifacts / "bench" / "bench.json").write_text(json.dumps(bench))


@pytest.fixture
def project(tmp_path, repo_root, shared_data, monkeypatch):
    """A params file in tmp (registry, lock and bench paths resolve there) and a cpu-profile context."""
    monkeypatch.delenv("UNIRET_ADMIN_TOKEN", raising=False)
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["registry"] = {"root": "registry", "dvc_push": False}
    raw["data"]["root"] = str(shared_data)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    ctx = make_context(tmp_path / "params.yaml", "cpu", str(shared_data), tmp_path / "artifacts")
    # The DAG command stands in for `dvc repro` (upstream outputs are written by the test); nightly
    # then runs the real gate stage against the registry itself.
    cfg = dataclasses.replace(ctx.params.section("nightly"), repro_command=f"{PY} -c pass", report=False)
    return ctx, cfg


def test_passing_gate_promotes_and_exits_0(project, tmp_path):
    ctx, cfg = project
    _upstream(ctx.artifacts, _metrics(0.70, 0.33))
    outcome = run_nightly(ctx, cfg)
    assert outcome.code == EXIT_PROMOTED, outcome.summary
    assert read_pointer(tmp_path / "registry") is not None
    assert any(s.startswith("promote: promoted") for s in outcome.steps)


def test_blocked_gate_exits_3_without_promoting(project, tmp_path):
    ctx, cfg = project
    _upstream(ctx.artifacts, _metrics(0.60, 0.30))  # below BM25 on the macro average
    outcome = run_nightly(ctx, cfg)
    assert outcome.code == EXIT_BLOCKED and "beats_baseline" in outcome.summary
    assert read_pointer(tmp_path / "registry") is None


def test_failing_command_exits_1_naming_it(project):
    ctx, cfg = project
    failing = f"{PY} -c 'import sys; sys.exit(4)'"
    outcome = run_nightly(ctx, dataclasses.replace(cfg, refresh_commands=[failing]))
    assert outcome.code == EXIT_FAILED and "exited with 4" in outcome.summary and "sys.exit(4)" in outcome.summary


def test_missing_metrics_after_repro_exits_1(project):
    ctx, cfg = project  # the repro command produced nothing: the gate has no metrics to decide on
    outcome = run_nightly(ctx, cfg)
    assert outcome.code == EXIT_FAILED and "evaluate" in outcome.summary


def test_second_run_exits_75_while_the_first_holds_the_lock(tmp_path, repo_root, shared_data):
    marker, lock = tmp_path / "first-is-running", tmp_path / "nightly.lock"
    code = f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(600)"
    hold = f"{PY} -c {shlex.quote(code)}"
    base = [sys.executable, "-m", "uniret", "nightly", "--params", str(repo_root / "params.yaml"), "--profile", "tiny",
            "--data", str(shared_data), "--artifacts", str(tmp_path / "artifacts"), "--lock-file", str(lock),
            "--repro", f"{PY} -c pass", "--no-report"]
    env = {**os.environ, "UNIRET_ARTIFACTS": str(tmp_path / "artifacts")}
    first = subprocess.Popen([*base, "--refresh", hold], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while not marker.exists():
            assert first.poll() is None, f"first nightly exited early with {first.returncode}"
            assert time.monotonic() < deadline, "first nightly never reached its refresh command"
            time.sleep(0.2)
        second = subprocess.run([*base, "--refresh", f"{PY} -c pass"], env=env, capture_output=True, text=True,
                                timeout=LOCK_WAIT_S)
        assert second.returncode == EXIT_LOCKED, second.stderr
        assert "another nightly run is in progress" in second.stderr
        assert str(first.pid) in second.stderr  # the holder's pid helps whoever finds the lock held
    finally:
        with contextlib.suppress(ProcessLookupError):  # already gone when it failed early
            os.killpg(first.pid, signal.SIGTERM)  # the first run and its sleeping refresh command
        first.wait(timeout=LOCK_WAIT_S)


def _gate_on_stored_scores(ctx):
    """The gate judges production by the scores stored at its promotion (the stand-in bundles of
    these tests cannot be re-scored or timed: the latency-vs-production rules are off)."""
    raw = dict(ctx.params.raw)
    raw["gate"] = {**raw["gate"], "rescore_production": "never", "max_latency_p50_vs_production": None,
                   "max_latency_p95_vs_production": None}
    ctx.params = type(ctx.params)(raw=raw, profile=ctx.params.profile, path=ctx.params.path)
    return ctx


def test_rollback_then_a_nightly_on_unchanged_data_keeps_the_rolled_back_to_version(project, tmp_path):
    from uniret.registry.control import read_control
    from uniret.registry.promotion import rollback

    ctx, cfg = project
    ctx = _gate_on_stored_scores(ctx)
    root = tmp_path / "registry"
    _upstream(ctx.artifacts, _metrics(0.70, 0.33))
    assert run_nightly(ctx, cfg).code == EXIT_PROMOTED
    first = read_pointer(root)["version"]
    (ctx.artifacts / "index" / "bundle" / "weights.bin").write_text("retrained")  # the next night's new bundle
    second = run_nightly(ctx, cfg)
    assert second.code == EXIT_PROMOTED, second.summary
    withdrawn = read_pointer(root)["version"]
    assert withdrawn != first

    rollback(root, dvc_push=False, reason="answers got worse")
    rolled_back_at = read_control(root).rejected and next(iter(read_control(root).rejected.values())).rolled_back_at
    # unchanged data: the DAG rebuilds the same bundle and the gate passes it again
    third = run_nightly(ctx, cfg)
    assert third.code == EXIT_BLOCKED, third.summary
    assert read_pointer(root)["version"] == first
    assert f"bundle {withdrawn}" in third.summary and rolled_back_at in third.summary
    assert "answers got worse" in third.summary and f"production stays {first}" in third.summary
    assert json.loads((ctx.artifacts / "gate" / "decision.json").read_text())["passed"] is True


def test_paused_registry_runs_everything_but_promotes_nothing_and_exits_4(project, tmp_path):
    from uniret.ops.nightly import EXIT_PAUSED
    from uniret.registry.control import pause, resume

    ctx, cfg = project
    root = tmp_path / "registry"
    root.mkdir()
    pause(root, "audit week")
    _upstream(ctx.artifacts, _metrics(0.70, 0.33))
    outcome = run_nightly(ctx, cfg)
    assert outcome.code == EXIT_PAUSED, outcome.summary
    assert "paused" in outcome.summary and "audit week" in outcome.summary and "gate passed" in outcome.summary
    assert "gate: decided" in outcome.steps and "promote: paused" in outcome.steps
    assert read_pointer(root) is None
    _upstream(ctx.artifacts, _metrics(0.60, 0.30))  # a blocked candidate while paused is still a paused night
    blocked = run_nightly(ctx, cfg)
    assert blocked.code == EXIT_PAUSED and "gate blocked" in blocked.summary and "beats_baseline" in blocked.summary

    resume(root)
    _upstream(ctx.artifacts, _metrics(0.70, 0.33))
    assert run_nightly(ctx, cfg).code == EXIT_PROMOTED and read_pointer(root) is not None
    off = run_nightly(ctx, dataclasses.replace(cfg, promote=False))  # params nightly.promote: false
    assert off.code == EXIT_PAUSED and "nightly.promote is false" in off.summary


def test_canary_mode_starts_a_canary_and_says_so(project, tmp_path):
    """canary.enabled: the first night promotes (nothing to compare with), the second starts a canary
    (exit 0, production stays) and its summary says so, not "promoted"."""
    ctx, cfg = project
    raw = yaml.safe_load((tmp_path / "params.yaml").read_text())
    raw["canary"] = {**raw["canary"], "enabled": True}
    raw["feedback"] = {**raw["feedback"], "log_dir": "logs"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    ctx = _gate_on_stored_scores(make_context(tmp_path / "params.yaml", "cpu", str(ctx.data_root), ctx.artifacts))
    _upstream(ctx.artifacts, _metrics(0.70, 0.33))
    first = run_nightly(ctx, cfg)
    assert first.code == EXIT_PROMOTED and first.summary == "promoted"
    production = read_pointer(tmp_path / "registry")["version"]
    (ctx.artifacts / "index" / "bundle" / "weights.bin").write_text("retrained")  # the next night's new bundle
    second = run_nightly(ctx, cfg)
    assert second.code == EXIT_PROMOTED and second.summary.startswith("canary started: "), second.summary
    assert second.summary.endswith(f"against {production}")
    assert read_pointer(tmp_path / "registry")["version"] == production
