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


def test_bytecode_and_numba_caches_written_after_a_run_change_no_stage(dvc_repo):
    """A stage's run leaves bytecode and numba's kernel caches under src/ (they are written when a
    kernel first compiles, after dvc hashed the deps): they must not make the stage stale, or a nightly
    on unchanged data retrains (issue 57)."""
    _dvc(dvc_repo, "repro", *SPINE)
    assert not _stale(dvc_repo) & set(SPINE)
    for folder in ("src/uniret/lexical", "src/uniret/data"):  # deps of bm25 and validate
        cache = dvc_repo / folder / "__pycache__"
        cache.mkdir(exist_ok=True)
        for name in ("bm25.cpython-311.pyc", "kernels._ranked-40.py311.nbi", "kernels._ranked-40.py311.1.nbc"):
            (cache / name).write_bytes(b"\0compiled")
        (dvc_repo / folder / "stray.nbi").write_bytes(b"\0")
    assert not _stale(dvc_repo) & set(SPINE)
    # a real source change still counts
    (dvc_repo / "src/uniret/lexical/bm25.py").write_text((dvc_repo / "src/uniret/lexical/bm25.py").read_text() + "\n# x\n")
    assert "bm25" in _stale(dvc_repo)
