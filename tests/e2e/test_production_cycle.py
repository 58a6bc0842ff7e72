"""Acceptance test of the production cycle (issue 5), everything real and on loopback:

kfp.local (SubprocessRunner) runs the tiny-profile DAG, the real stages train/index/evaluate/gate/
promote into a registry in tmp, and a real `uniret serve` (uvicorn on 127.0.0.1), started cold
BEFORE the first run, follows every pointer change through /admin/reload without a restart.

1. the whole DAG (`uniret pipeline run --local --profile tiny`) passes the tiny gate and promotes;
2. the cold server then answers /search from that bundle (the promote stage notified it);
3. a sparsity-collapsed candidate (params override retrieval.lexical.quant: 0.01 rounds every
   impact to 0, so the index's mean_active_terms_doc is 0) is BLOCKED by gate check sparsity_min;
   production.json and the served version stay as they were;
4. after a second, healthy promotion `uniret rollback` restores the first bundle and serving follows;
5. `dvc repro evaluate` (the whole DAG up to evaluate) writes the same metrics as the kfp run of 1.

Runs 3-4 re-run the DAG's suffix index -> bench -> evaluate -> gate -> promote on the first run's training
outputs (the DAG builder takes a stage list): the full DAG once keeps the module within minutes.
Evaluation is on SciFact only (data.eval_datasets in the test's params) for the same reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from uniret.bench.http_client import get_json, post_json
from uniret.bench.server import LOOPBACK, LocalServer
from uniret.config import load_params
from uniret.stages import STAGES

pytestmark = pytest.mark.slow

TOKEN = "e2e-admin-token"
PROFILE = "tiny"
EVAL_DATASETS = ["scifact"]  # tests/conftest.py TINY_DAG_DATASETS
QUERY = {"query": "protein folding in cells", "k": 5}
RUN_TIMEOUT_S = 1200.0  # one local kfp run (the full DAG takes a few minutes on 2 cores)
CLI_TIMEOUT_S = 120.0  # rollback and other short commands
SERVE_START_TIMEOUT_S = 300.0
COLLAPSING_QUANT = 0.01  # impacts round(quant * w) with w of a few units: all 0
HEALTHY_TOP_N = 64  # second candidate: top-64 terms per doc (a different, healthy bundle)
SUFFIX = ["index", "bench", "evaluate", "gate", "promote"]


def _cli(args: list[str], cwd: Path, log: Path, timeout_s: float, env: dict[str, str] | None = None) -> str:
    """`python -m uniret <args>` in a subprocess; output kept in `log`; non-zero exit fails the test."""
    proc = subprocess.run([sys.executable, "-m", "uniret", *args], cwd=cwd, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=timeout_s)
    log.write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"uniret {' '.join(args)} exited {proc.returncode}; tail:\n{proc.stderr[-4000:]}"
    return proc.stdout


def _test_params(params: dict[str, Any], **sections: dict[str, Any]) -> dict[str, Any]:
    """The whole-DAG params (tests/conftest.py's tiny_dag_params: the dvc run's too) with the test's
    values merged into the given top-level sections."""
    for name, values in sections.items():
        params[name] = {**params[name], **values}
    return params


def _metrics_tables(path: Path) -> dict[str, Any]:
    """The scores of an evaluate metrics.json (per dataset/system and macro), without run metadata."""
    doc = json.loads(path.read_text())
    return {"datasets": doc["datasets"], "macro": doc["macro"]}


def _write_yaml(path: Path, data: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@dataclass
class Cycle:
    """The shared state of the scenario: workdir (params.yaml, artifacts/, registry/), server, logs."""

    repo: Path
    data: Path
    workdir: Path
    logs: Path
    server: LocalServer
    cold: dict[str, int]

    @property
    def params(self) -> Path:
        return self.workdir / "params.yaml"

    @property
    def registry(self) -> Path:
        return self.workdir / "registry"

    def pointer(self) -> dict[str, Any]:
        return json.loads((self.registry / "production.json").read_text())

    def artifact(self, stage: str, name: str) -> dict[str, Any]:
        return json.loads((self.workdir / "artifacts" / stage / name).read_text())

    def set_lexical(self, **values: Any) -> None:
        """Edit the workdir's params.yaml: retrieval.lexical of the tiny profile (what a user would do)."""
        params = yaml.safe_load(self.params.read_text())
        params["retrieval"]["profiles"][PROFILE]["lexical"] = values
        _write_yaml(self.params, params)

    def pipeline_run(self, name: str, stages: list[str] | None = None) -> str:
        """`uniret pipeline run --local` on the workdir, with the admin token the promote stage sends."""
        args = ["pipeline", "run", "--local", "--profile", PROFILE, "--params", str(self.params),
                "--workdir", str(self.workdir), "--data", str(self.data)]
        if stages:
            args += ["--stages", ",".join(stages)]
        return _cli(args, self.repo, self.logs / f"{name}.log", RUN_TIMEOUT_S, {"UNIRET_ADMIN_TOKEN": TOKEN})

    def search(self) -> dict[str, Any]:
        status, body = post_json(LOOPBACK, self.server.port, "/search", QUERY, timeout_s=CLI_TIMEOUT_S)
        assert status == 200, body
        return body

    def ready_version(self) -> str:
        status, body = get_json(LOOPBACK, self.server.port, "/readyz", timeout_s=CLI_TIMEOUT_S)
        assert status == 200, body
        return body["bundle"]["version"]


@pytest.fixture(scope="module")
def cycle(tmp_path_factory, repo_root, shared_data, tiny_dag_params):
    """A workdir whose params point the registry's reload at a `uniret serve` started cold on it."""
    base = tmp_path_factory.mktemp("e2e")
    workdir, logs = base / "wd", base / "logs"
    workdir.mkdir()
    logs.mkdir()
    server = LocalServer(["--registry", str(workdir / "registry")], workdir / "params.yaml", PROFILE,
                         env={"UNIRET_ADMIN_TOKEN": TOKEN}, log_dir=logs)
    params = _test_params(tiny_dag_params(),
                          registry={"serve_url": server.base_url, "dvc_push": False},
                          pipeline={"local_root": str(base / "kfp")})
    _write_yaml(workdir / "params.yaml", params)
    server.start(SERVE_START_TIMEOUT_S, wait_ready=False)
    try:
        cold = {"readyz": get_json(LOOPBACK, server.port, "/readyz")[0],
                "search": post_json(LOOPBACK, server.port, "/search", QUERY)[0]}
        yield Cycle(repo_root, shared_data, workdir, logs, server, cold)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def first_promotion(cycle):
    """The whole DAG once; the tiny gate passes and promote flips production.json."""
    pid = cycle.server.proc.pid
    out = cycle.pipeline_run("full-dag")
    metrics = _metrics_tables(cycle.workdir / "artifacts" / "evaluate" / "metrics.json")
    return {"stdout": out, "pointer": cycle.pointer(), "server_pid": pid, "metrics": metrics}


@pytest.fixture(scope="module")
def blocked_run(cycle, first_promotion):
    """The suffix again with a sparsity-collapsed candidate bundle; params restored afterwards."""
    before = (cycle.registry / "production.json").read_bytes()
    bundles = sorted(p.name for p in (cycle.registry / "bundles").iterdir())
    cycle.set_lexical(quant=COLLAPSING_QUANT)
    try:
        cycle.pipeline_run("blocked", SUFFIX)
    finally:
        cycle.set_lexical()
    return {"pointer_before": before, "bundles_before": bundles,
            "decision": cycle.artifact("gate", "decision.json"),
            "decision_md": (cycle.workdir / "artifacts" / "gate" / "decision.md").read_text(),
            "index": json.loads((cycle.workdir / "artifacts" / "index" / "bundle" / "manifest.json").read_text())}


@pytest.fixture(scope="module")
def second_promotion(cycle, blocked_run):
    """A healthy but different candidate (top-N terms per doc) promoted over the first bundle."""
    cycle.set_lexical(top_n=HEALTHY_TOP_N)
    try:
        cycle.pipeline_run("second", SUFFIX)
    finally:
        cycle.set_lexical()
    return cycle.pointer()


def test_full_dag_promotes_and_the_cold_server_follows(cycle, first_promotion):
    assert cycle.cold == {"readyz": 503, "search": 503}  # nothing promoted when the server started
    artifacts = cycle.workdir / "artifacts"
    ran = {s for s in STAGES if (artifacts / s / "manifest.json").is_file()}
    assert ran == set(STAGES), f"stages without output: {set(STAGES) - ran}"
    assert "local run finished" in first_promotion["stdout"]

    decision = cycle.artifact("gate", "decision.json")
    assert decision["passed"] is True
    assert any(c["name"] == "sparsity_min" and c["status"] == "pass" for c in decision["checks"])
    promotion = cycle.artifact("promote", "promotion.json")
    pointer = first_promotion["pointer"]
    assert promotion["changed"] is True and promotion["previous"] is None
    assert pointer["version"] == promotion["version"]
    assert (cycle.registry / pointer["bundle"] / "manifest.json").is_file()
    assert promotion["notify"]["status"] == "ok", promotion["notify"]  # promote told the server itself

    # same process as before the run: it reloaded, it was not restarted
    assert cycle.server.proc.pid == first_promotion["server_pid"] and cycle.server.proc.poll() is None
    assert cycle.ready_version() == pointer["version"]
    body = cycle.search()
    assert body["version"] == pointer["version"]
    corpus = artifacts / "validate" / "datasets" / "scifact" / "corpus.jsonl"
    doc_ids = {json.loads(line)["_id"] for line in corpus.read_text().splitlines() if line.strip()}
    assert 0 < len(body["results"]) <= QUERY["k"]
    assert {h["doc_id"] for h in body["results"]} <= doc_ids  # hits come from the trained slice's corpus


def test_a_sparsity_collapsed_candidate_is_blocked(cycle, first_promotion, blocked_run):
    assert blocked_run["index"]["metrics"]["mean_active_terms_doc"] == 0.0  # the damage is real
    decision = blocked_run["decision"]
    assert decision["passed"] is False
    failed = {c["name"]: c for c in decision["checks"] if c["status"] == "fail"}
    assert set(failed) == {"sparsity_min"}, failed  # tiny gate: quality floors 0, so the collapse alone blocks
    assert "sparsity_min" in blocked_run["decision_md"] and failed["sparsity_min"]["reason"] in blocked_run["decision_md"]

    # production untouched: same pointer file, no new bundle, serving still on the first version
    assert (cycle.registry / "production.json").read_bytes() == blocked_run["pointer_before"]
    assert sorted(p.name for p in (cycle.registry / "bundles").iterdir()) == blocked_run["bundles_before"]
    version = first_promotion["pointer"]["version"]
    assert cycle.search()["version"] == version
    assert cycle.ready_version() == version


def test_rollback_restores_the_previous_bundle_and_serving_follows(cycle, first_promotion, second_promotion):
    first = first_promotion["pointer"]["version"]
    second = second_promotion["version"]
    assert second != first
    assert cycle.artifact("promote", "promotion.json")["notify"]["status"] == "ok"
    assert cycle.search()["version"] == second

    out = _cli(["rollback", "--params", str(cycle.params), "--profile", PROFILE, "--no-dvc-push"],
               cycle.repo, cycle.logs / "rollback.log", CLI_TIMEOUT_S, {"UNIRET_ADMIN_TOKEN": TOKEN})
    assert f"{second} -> {first}" in out and "notify: ok" in out
    assert cycle.pointer()["version"] == first
    assert cycle.search()["version"] == first
    assert cycle.ready_version() == first


def test_dvc_repro_and_kfp_local_write_the_same_metrics(cycle, first_promotion, tiny_dag_by_dvc):
    """Compared: artifacts/evaluate/metrics.json's scores (per dataset/system and macro; run metadata
    left out) of the WHOLE DAG up to evaluate - validate, bm25, warmup, mine, reranker, continual,
    distill, index, evaluate - once by kfp.local (the first run of this module, before the suffix
    runs overwrote it) and once by `dvc repro evaluate` (the session's tiny_dag_by_dvc: a temp git repo
    holding a copy of dvc.yaml, src/ and the same params; only the registry/pipeline sections, read by
    neither, differ). Both call the same stage functions with the same seeds, so every score must be equal."""
    repo, output = tiny_dag_by_dvc
    (cycle.logs / "dvc-repro.log").write_text(output)
    # evaluate reads no output of bench (the gate does), so `dvc repro evaluate` leaves it out; it reads
    # feedback's held-out day (the newest traffic), which skips here without logs
    upstream = [s for s in STAGES[: STAGES.index("evaluate") + 1] if s != "bench"]
    assert [s for s in upstream if f"Running stage '{s}'" in output] == list(upstream)

    by_dvc = _metrics_tables(repo / "artifacts" / "evaluate" / "metrics.json")
    by_kfp = first_promotion["metrics"]
    assert set(by_dvc["datasets"]) == set(EVAL_DATASETS)
    params = load_params(repo / "params.yaml")
    recipe = params.section("model").recipe
    plan = params.section("training").plan(recipe)
    trained = {f"{recipe}/{m}" for m in plan.eval_modes}
    assert {"bm25", plan.serve_mode, *trained} <= set(by_dvc["datasets"]["scifact"])  # trained and bundle systems
    assert by_kfp == by_dvc
