"""uniret.kubeflow.containers and the failure checks that make up for DockerRunner's lost exit statuses."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from uniret.core.errors import StageFailed
from uniret.kubeflow import containers as kc
from uniret.kubeflow.local import LocalRun, unfinished_stages
from uniret.kubeflow.task import check_upstream


def test_docker_runner_binds_each_path_once_at_the_same_path(tmp_path):
    wd, data = tmp_path / "wd", tmp_path / "data"
    wd.mkdir()
    data.mkdir()
    binds = kc.run_binds(wd, [data, None, tmp_path / "missing", wd])
    runner = kc.docker_runner(kc.ContainerRun("img:1", binds, {"UNIRET_DATA": str(data)}, user="1000:1000",
                                              working_dir=str(wd)))
    args = runner.container_run_args
    mounts = {m["Target"]: (m["Source"], m["ReadOnly"]) for m in args["mounts"]}
    assert mounts == {str(wd): (str(wd), False), str(data): (str(data), True)}  # writable wins for wd
    assert args["environment"] == {"UNIRET_DATA": str(data)}
    assert args["user"] == "1000:1000" and args["network_mode"] == "host" and args["working_dir"] == str(wd)
    assert "entrypoint" not in args and "volumes" not in args  # kfp sets volumes itself


def test_a_task_after_a_failed_one_stops_before_any_work(tmp_path):
    check_upstream("bm25", None)  # the first task has no upstream
    done = tmp_path / "manifest"
    done.write_text("{}")
    check_upstream("bm25", SimpleNamespace(path=str(done)))
    with pytest.raises(StageFailed, match="task mine: the upstream task left no manifest"):
        check_upstream("mine", SimpleNamespace(path=str(tmp_path / "nothing")))


def test_unfinished_stages_count_promote_whatever_the_gate_decided(tmp_path):
    """promote runs on a blocked night too (it refreshes the corpus): a run without its manifest failed."""
    run = LocalRun(outputs=tmp_path, workdir=tmp_path, manifests={"validate": {}, "gate": {}})
    assert unfinished_stages(["validate", "bm25", "gate", "promote"], run) == ["bm25", "promote"]
    run.manifests.update(bm25={}, promote={})
    assert unfinished_stages(["validate", "bm25", "gate", "promote"], run) == []


def test_podman_service_answers_then_stops(repo_root, podman):
    folder = Path(tempfile.mkdtemp(prefix="uniret-podman-"))  # short: unix socket paths are limited
    try:
        with kc.podman_service(folder, repo_root, timeout_s=60.0) as url:
            sock = Path(url.removeprefix("unix://"))
            assert kc._answers(sock)
        assert not kc._answers(sock)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_podman_service_failure_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(kc.shutil, "which", lambda name: None)
    with pytest.raises(StageFailed, match="podman not found"), kc.podman_service(tmp_path, tmp_path, 1.0):
        pass


def _response(status: int, message: str):
    import json

    import requests

    response = requests.Response()
    response.status_code = status
    response._content = json.dumps({"cause": "no such container", "message": message, "response": status}).encode()
    response.url = "http+docker://localhost/v1.41/containers/0af1/json"
    return response


def test_podmans_500_for_a_removed_container_reads_as_not_found_only_while_open():
    from docker import errors
    from docker.api.client import APIClient

    gone = _response(500, "container 0af1 does not exist in database: no such container")
    with pytest.raises(errors.APIError) as before:  # what failed CI: kfp catches NotFound only
        APIClient._raise_for_status(None, gone)
    assert not isinstance(before.value, errors.NotFound)
    with kc.gone_is_not_found():
        with pytest.raises(errors.NotFound, match="does not exist in database"):
            APIClient._raise_for_status(None, gone)
        with pytest.raises(errors.APIError) as other:  # any other server error still fails the run
            APIClient._raise_for_status(None, _response(500, "creating container storage: disk full"))
        assert not isinstance(other.value, errors.NotFound)
    with pytest.raises(errors.APIError) as after:
        APIClient._raise_for_status(None, gone)
    assert not isinstance(after.value, errors.NotFound)
