"""`dvc push` of the registry: real dvc, a local-folder remote in a throwaway git+DVC project."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from uniret.registry.dvc_sync import push_registry
from uniret.registry.promotion import promote

DVC = str(Path(sys.executable).with_name("dvc"))


def _run(cwd: Path, *argv: str) -> None:
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True)


def _bundle(tmp: Path) -> Path:
    src = tmp / "bundle"
    src.mkdir()
    (src / "manifest.json").write_text(json.dumps({"metrics": {}}))
    (src / "dense.index").write_bytes(b"\x00" * 64)
    return src


def test_registry_outside_dvc_is_skipped_with_reason(tmp_path):
    status = push_registry(tmp_path / "registry")
    assert status.startswith("skipped:") and "not inside a DVC project" in status


@pytest.mark.slow
def test_promote_pushes_the_registry_to_the_dvc_remote(tmp_path):
    project, remote = tmp_path / "project", tmp_path / "remote"
    project.mkdir()
    remote.mkdir()
    _run(project, "git", "init", "-q")
    _run(project, DVC, "init", "-q")
    _run(project, DVC, "config", "--local", "core.site_cache_dir", str(tmp_path / "dvc-site"))
    _run(project, DVC, "config", "core.analytics", "false")

    no_remote = promote(project / "registry", _bundle(tmp_path), evaluation=None, decision=None, lineage={},
                        version="v1")
    assert no_remote.dvc == "skipped: no DVC remote configured"

    _run(project, DVC, "remote", "add", "-d", "local", str(remote))
    assert push_registry(project / "registry") == "pushed"
    assert (project / "registry.dvc").is_file()
    pushed = [p for p in remote.rglob("*") if p.is_file()]
    assert pushed, "the remote received no files"
