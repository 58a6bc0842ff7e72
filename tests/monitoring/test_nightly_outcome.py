"""A real blocked nightly run (`run_nightly`: the gate stage on the registry) recorded in the registry and
notified to a webhook receiver on 127.0.0.1, in both shapes; a receiver that is down, refuses or stalls
never fails the run."""

from __future__ import annotations

import dataclasses
import json
import shlex
import socket
import sys
from pathlib import Path

import pytest
import yaml

from uniret.config.recipes import EVAL_MODES
from uniret.ops.nightly import (
    EXIT_BLOCKED,
    EXIT_FAILED,
    EXIT_LOCKED,
    EXIT_PROMOTED,
    NightlyOutcome,
    run_nightly,
)
from uniret.ops.nightly_codes import outcome_name
from uniret.ops.nightly_metrics import record_outcome
from uniret.ops.nightly_notify import notify_outcome
from uniret.registry.nightly_status import read_status
from uniret.runtime import make_context

PY = shlex.quote(sys.executable)


def _upstream(artifacts: Path, candidate: str) -> None:
    """What `dvc repro` leaves for the gate: a candidate below BM25 (the gate blocks it), in-budget bench figures."""
    for stage in ("validate", "index", "bench", "evaluate"):
        (artifacts / stage).mkdir(parents=True, exist_ok=True)
        (artifacts / stage / "manifest.json").write_text(json.dumps({"inputs": {"x": "h"}}))
    cand, bm25 = {"scifact": 0.60, "nfcorpus": 0.30}, {"scifact": 0.66, "nfcorpus": 0.32}
    metrics = {"datasets": {ds: {candidate: {"ndcg@10": cand[ds]}, "bm25": {"ndcg@10": bm25[ds]}} for ds in cand},
               "macro": {candidate: {"ndcg@10": 0.45}, "bm25": {"ndcg@10": 0.49}}}
    (artifacts / "evaluate" / "metrics.json").write_text(json.dumps(metrics))
    (artifacts / "index" / "bundle").mkdir(exist_ok=True)
    (artifacts / "index" / "bundle" / "manifest.json").write_text(json.dumps({"metrics": {"mean_active_terms_doc": 50}}))
    bench = {"modes": {mode: {"p50_ms": 1.2, "p95_ms": 20.0} for mode in (*EVAL_MODES, "bm25")},
             "bytes_per_doc_dense": 1536.0, "bytes_per_doc_sparse": 900.0}
    (artifacts / "bench" / "bench.json").write_text(json.dumps(bench))


def _project(tmp_path: Path, repo_root: Path, shared_data: Path, notify: dict):
    tmp_path.mkdir(parents=True, exist_ok=True)
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["registry"] = {"root": "registry", "dvc_push": False}
    raw["data"]["root"] = str(shared_data)
    raw["notify"] = notify
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    ctx = make_context(tmp_path / "params.yaml", "cpu", str(shared_data), tmp_path / "artifacts")
    from uniret.registry.gate import resolve_gate_config

    _upstream(ctx.artifacts, resolve_gate_config(ctx.params).candidate_system)
    cfg = dataclasses.replace(ctx.params.section("nightly"), repro_command=f"{PY} -c pass", report=False)
    return ctx, cfg


@pytest.fixture(autouse=True)
def _no_env_url(monkeypatch):
    monkeypatch.delenv("UNIRET_NOTIFY_URL", raising=False)
    monkeypatch.delenv("UNIRET_ADMIN_TOKEN", raising=False)


def test_a_blocked_nightly_is_recorded_and_notified(tmp_path, repo_root, shared_data, receiver):
    """The real outcome of `run_nightly`, passed to the two calls its outcome point makes (record, notify).
    They get a params file of their own (another registry, the receiver's URL), so this holds whether or not
    run_nightly already makes the calls itself (its own params here: notifications off)."""
    ctx, cfg = _project(tmp_path / "run", repo_root, shared_data, {"url": None})
    monitored, _ = _project(tmp_path / "monitored", repo_root, shared_data, {"url": receiver.url})
    for night in (1, 2):
        outcome = run_nightly(ctx, cfg)
        assert outcome.code == EXIT_BLOCKED, outcome.summary
        status = record_outcome(monitored.params, outcome)
        result = notify_outcome(monitored.params, outcome)
        assert result.status == "sent", result.detail
        assert status["blocked_in_row"] == night
    assert read_status(tmp_path / "monitored" / "registry")["last_run"]["summary"] == outcome.summary
    assert len(receiver.bodies) == 2
    got = receiver.bodies[-1]
    assert got["path"] == "/hooks/secret-path" and got["content_type"] == "application/json"
    assert set(got["json"]) == {"text"}  # Slack's shape
    text = got["json"]["text"]
    assert text.startswith("uniret nightly BLOCKED on ") and "(exit 3)" in text and "beats_baseline" in text
    assert "secret-path" not in result.detail  # the webhook's secret path stays out of results and logs


def test_alertmanager_shape_and_the_env_url(tmp_path, repo_root, shared_data, receiver, monkeypatch):
    ctx, cfg = _project(tmp_path, repo_root, shared_data,
                        {"url": "http://127.0.0.1:9/never-used", "format": "alertmanager"})
    outcome = run_nightly(ctx, cfg)
    monkeypatch.setenv("UNIRET_NOTIFY_URL", receiver.url)  # the env var wins over params' url
    assert notify_outcome(ctx.params, outcome).status == "sent"
    (alert,) = receiver.bodies[0]["json"]
    assert alert["labels"] == {"alertname": "UniretNightlyBlocked", "severity": "warning", "service": "uniret",
                               "outcome": "blocked"}
    assert "beats_baseline" in alert["annotations"]["description"] and alert["startsAt"].endswith("Z")
    assert set(alert) == {"labels", "annotations", "startsAt"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_a_receiver_down_or_refusing_never_fails_the_run(tmp_path, repo_root, shared_data, receiver):
    blocked = NightlyOutcome(EXIT_BLOCKED, "blocked: beats_baseline: ...")
    ctx, _ = _project(tmp_path, repo_root, shared_data, {"url": f"http://127.0.0.1:{_closed_port()}/hook"})
    result = notify_outcome(ctx.params, blocked)
    assert result.status == "failed" and "127.0.0.1" in result.detail
    receiver.status = 500
    ctx, _ = _project(tmp_path / "refusing", repo_root, shared_data, {"url": receiver.url})
    result = notify_outcome(ctx.params, blocked)
    assert result.status == "failed" and "HTTP 500" in result.detail and len(receiver.bodies) == 1
    with socket.socket() as silent:  # listens, never answers: the POST times out
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        ctx, _ = _project(tmp_path / "silent", repo_root, shared_data,
                          {"url": f"http://127.0.0.1:{silent.getsockname()[1]}/hook", "timeout_s": 0.5})
        result = notify_outcome(ctx.params, blocked)
    assert result.status == "failed" and "timed out" in result.detail


def test_what_notifies_and_what_is_recorded(tmp_path, repo_root, shared_data, receiver):
    ctx, _ = _project(tmp_path, repo_root, shared_data, {"url": receiver.url})
    assert notify_outcome(ctx.params, NightlyOutcome(EXIT_PROMOTED, "promoted")).status == "skipped"  # ok: not in `on`
    assert notify_outcome(ctx.params, NightlyOutcome(EXIT_LOCKED, "another run holds the lock")).status == "skipped"
    assert record_outcome(ctx.params, NightlyOutcome(EXIT_LOCKED, "another run holds the lock")) is None
    assert notify_outcome(ctx.params, NightlyOutcome(EXIT_FAILED, "failed: `dvc repro` exited with 1")).status == "sent"
    assert receiver.bodies[0]["json"]["text"].startswith("uniret nightly FAILED")
    assert [outcome_name(c) for c in (EXIT_PROMOTED, EXIT_BLOCKED, EXIT_FAILED, 127)] == ["ok", "blocked", "failed", "failed"]
    off, _ = _project(tmp_path / "off", repo_root, shared_data, {"url": None})
    assert notify_outcome(off.params, NightlyOutcome(EXIT_BLOCKED, "blocked")).status == "skipped"
    assert len(receiver.bodies) == 1
