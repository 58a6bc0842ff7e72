"""The container tests skip where podman is missing, saying how to run them, and fail under CI.

Each case runs one podman test in a pytest subprocess whose PATH holds no podman (tests/conftest.py
decides skip or fail in one place, the `podman` and `cpu_image` fixtures).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PODMAN_TEST = "tests/kubeflow/test_containers.py::test_podman_service_answers_then_stops"


def _run_without_podman(repo_root: Path, ci: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(Path(sys.executable).parent)  # the venv's commands only: no podman there
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", PODMAN_TEST],
                          cwd=repo_root, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("ci", [None, "false"])
def test_a_developer_without_podman_is_told_how_to_run_them(repo_root, ci):
    out = _run_without_podman(repo_root, ci)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "1 skipped" in out.stdout
    assert "podman is not installed; to run them: sudo docker/install-podman.sh, then make test-images" in out.stdout
    assert f"skipped  {PODMAN_TEST}" in out.stdout  # the container tests' summary


def test_under_ci_a_missing_podman_fails_with_the_reason(repo_root):
    out = _run_without_podman(repo_root, "true")
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    assert "podman is not installed: under CI the container tests must run" in out.stdout
    assert "skipped" not in out.stdout
    assert f"failed   {PODMAN_TEST}" in out.stdout
