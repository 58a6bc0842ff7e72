"""dvc.yaml behaves as a build system: a second repro does nothing, a BM25 change reruns only dependents.

Runs the real dvc (in a temp git repo holding a copy of the repo's dvc.yaml, params.yaml and
sources) on the spine stages with the tiny profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

SPINE = ["validate", "bm25"]  # reproduced for real; the rest of the DAG is checked through `dvc status`


def _dvc(repo: Path, *args: str) -> str:
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        [str(bin_dir / "dvc"), *args], cwd=repo, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, f"dvc {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _ran(output: str) -> list[str]:
    return [s for s in SPINE if f"Running stage '{s}'" in output]


@pytest.fixture
def dvc_repo(tmp_path, dvc_project):
    return dvc_project(tmp_path / "repo")


def _stale(repo: Path) -> set[str]:
    """Stages `dvc status` reports as changed (their deps, params or outs differ from dvc.lock)."""
    out = _dvc(repo, "status", "--json")
    return set(json.loads(out[out.index("{"):]) if "{" in out else set())


def test_repro_twice_and_param_change(dvc_repo):
    first = _dvc(dvc_repo, "repro", *SPINE)
    assert _ran(first) == SPINE
    assert (dvc_repo / "artifacts/bm25/runs/scifact.trec").is_file()

    second = _dvc(dvc_repo, "repro", *SPINE)
    assert _ran(second) == []  # nothing to reproduce
    assert not _stale(dvc_repo) & set(SPINE)

    params = yaml.safe_load((dvc_repo / "params.yaml").read_text())
    params["bm25"]["k1"] = 1.2
    (dvc_repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stale = _stale(dvc_repo)
    assert "bm25" in stale and "validate" not in stale  # validate does not depend on BM25 params
    third = _dvc(dvc_repo, "repro", *SPINE)
    assert _ran(third) == ["bm25"]
