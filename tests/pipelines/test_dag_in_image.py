"""The tiny-profile DAG with every task in the built CPU image (kfp.local DockerRunner over podman's
Docker-compatible socket) gives the metrics of the same DAG under SubprocessRunner.

Needs podman and the image of this tree (`make test-images` builds it and runs these; without them
they skip, under CI they fail: tests/conftest.py); `make dag-in-image` is the same run by hand. Both runs
use one params file (SciFact only, as tests/e2e does, to keep the module within minutes) and the
same seeds; the container has its own Python build (Debian's) and BLAS threads, so scores are
compared within SCORE_TOLERANCE rather than bit for bit.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from uniret.config import load_params
from uniret.kubeflow.local import run_local
from uniret.stages import STAGES

pytestmark = pytest.mark.slow

EVAL_DATASETS = ["scifact"]
SCORE_TOLERANCE = 1e-3  # absolute, on nDCG/recall/MRR values in [0, 1]


def _python_in(image: str, podman: list[str], env: dict[str, str]) -> str:
    out = subprocess.run([*podman, "run", "--rm", "--network", "none", image, "python", "-c",
                          "import platform; print(platform.python_version())"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


@pytest.fixture(scope="module")
def runs(repo_root, shared_data, tmp_path_factory, cpu_image) -> dict[str, Any]:
    """The whole tiny DAG twice on the same params: in the image, then as host subprocesses."""
    base = tmp_path_factory.mktemp("dag")
    params = yaml.safe_load((repo_root / "params.yaml").read_text())
    params["data"]["root"] = str(shared_data)
    params["data"]["eval_datasets"] = EVAL_DATASETS
    params["evaluate"]["expected_scores"] = []  # sliced data: the reference check is skipped anyway
    params_path = base / "params.yaml"
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    cfg = dataclasses.replace(load_params(params_path).section("pipeline"), local_root=str(base / "kfp"))
    out: dict[str, Any] = {"tag": cpu_image}  # "image" and "host" hold the two runs
    for name, run_image in (("image", cpu_image), ("host", None)):
        run = run_local(repo_root, cfg, workdir=base / name, profile="tiny", params_path=params_path,
                        data=shared_data, image=run_image)
        out[name] = run
    return out


def _scores(workdir: Path) -> dict[str, Any]:
    doc = json.loads((workdir / "artifacts" / "evaluate" / "metrics.json").read_text())
    return {"datasets": doc["datasets"], "macro": doc["macro"]}


def _flat(tree: Any, prefix: str = "") -> dict[str, float]:
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in _flat(sub, f"{prefix}{key}/").items()}
    return {prefix.rstrip("/"): tree} if isinstance(tree, (int, float)) and not isinstance(tree, bool) else {}


def test_every_task_ran_in_the_image(runs, podman, podman_env):
    in_image, on_host = runs["image"], runs["host"]
    assert set(in_image.manifests) == set(STAGES), f"missing: {set(STAGES) - set(in_image.manifests)}"
    image_python = _python_in(runs["tag"], podman, podman_env)
    host_python = on_host.manifests["validate"]["versions"]["python"]
    if image_python == host_python:
        pytest.skip(f"image and host both run Python {host_python}: manifests cannot tell them apart")
    for stage, manifest in in_image.manifests.items():
        # the interpreter that ran the stage is the image's (Debian's python3), not this host's
        assert manifest["versions"]["python"] == image_python, stage
    assert {m["versions"]["python"] for m in on_host.manifests.values()} == {host_python}


def test_same_metrics_and_decision_as_the_subprocess_run(runs):
    in_image, on_host = runs["image"].workdir, runs["host"].workdir
    a, b = _flat(_scores(in_image)), _flat(_scores(on_host))
    assert a.keys() == b.keys() and len(a) > 10
    worst = max(abs(a[k] - b[k]) for k in a)
    assert worst <= SCORE_TOLERANCE, {k: (a[k], b[k]) for k in a if abs(a[k] - b[k]) > SCORE_TOLERANCE}
    decision = [json.loads((wd / "artifacts" / "gate" / "decision.json").read_text()) for wd in (in_image, on_host)]
    assert decision[0]["passed"] == decision[1]["passed"]
    assert [c["status"] for c in decision[0]["checks"]] == [c["status"] for c in decision[1]["checks"]]
    # the report and promote tasks ran in the container too (promote only when the gate passed)
    assert (in_image / "artifacts" / "report" / "report.md").is_file()
    assert (in_image / "artifacts" / "promote").is_dir() == decision[0]["passed"]


def test_failed_task_is_caught_although_kfp_sees_exit_0(repo_root, cpu_image, tmp_path):
    """Where kfp.local cannot drive podman fully: run_docker_container (auto_remove=True) streams the
    logs, then container.wait() gets 404 (podman already removed the container) and kfp assumes
    exit 0. uniret makes up for it: each task checks its upstream manifest and run_local checks
    that every planned stage wrote one."""
    import docker
    from kfp.local.docker_task_handler import run_docker_container

    from uniret.core.errors import StageFailed
    from uniret.kubeflow.containers import podman_service

    socket_dir = Path(tempfile.mkdtemp(prefix="uniret-podman-"))
    try:
        with podman_service(socket_dir, repo_root, timeout_s=60.0) as url:
            client = docker.DockerClient(base_url=url)
            try:
                assert run_docker_container(client, cpu_image, ["sh", "-c", "exit 3"], {}, network_mode="host") == 0
            finally:
                client.close()
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)

    cfg = dataclasses.replace(load_params(repo_root / "params.yaml").section("pipeline"),
                              local_root=str(tmp_path / "kfp"))
    # validate fails (no data); kfp carries on (exit 0) unless podman already lost the container
    # (a task failing within a second: podman answers 500 to kfp's logs call), and either way the
    # run fails and bm25 does no work on the failed stage's (here: missing) outputs.
    with pytest.raises(StageFailed, match=r"task\(s\) validate, bm25 wrote no manifest|kfp local run failed"):
        run_local(repo_root, cfg, workdir=tmp_path / "wd", profile="tiny", stages=["validate", "bm25"],
                  params_path=repo_root / "params.yaml", data=tmp_path / "no-such-data", image=cpu_image)
    assert not (tmp_path / "wd" / "artifacts" / "validate").exists()
    assert not (tmp_path / "wd" / "artifacts" / "bm25").exists()
