"""Fault-injection suite (issue 12): every test here carries the `faults` marker."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.faults)


def tree_hash(root: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under `root` (empty when absent): before/after compare."""
    root = Path(root)
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m uniret ARGS` in a subprocess: exit code and messages as a user sees them."""
    return subprocess.run([sys.executable, "-m", "uniret", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


@pytest.fixture
def small_data(tmp_path, shared_data):
    """A data root with tiny slices of scifact and nfcorpus (made from ../shared/data)."""
    from uniret.config.sections import SliceConfig
    from uniret.data.beir import BeirDataset
    from uniret.data.slicing import write_slice

    root = tmp_path / "data"
    for name in ("scifact", "nfcorpus"):
        write_slice(BeirDataset(shared_data / name, name), root / name, SliceConfig(max_queries=6, max_docs=60))
    return root


@pytest.fixture
def params_file(tmp_path, repo_root):
    """Write a variant of the repo's params.yaml: params_file(edit) -> path; `edit(raw)` changes it."""

    def make(edit=None, name: str = "params.yaml") -> Path:
        raw = yaml.safe_load((repo_root / "params.yaml").read_text())
        raw["data"]["eval_datasets"] = ["scifact", "nfcorpus"]
        raw["registry"] = {**raw.get("registry", {}), "root": "registry", "dvc_push": False}
        if edit is not None:
            edit(raw)
        path = tmp_path / name
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
        return path

    return make


@pytest.fixture
def cli():
    """run_cli as a fixture (test modules cannot import this conftest under --import-mode=importlib)."""
    return run_cli


@pytest.fixture
def snapshot():
    """tree_hash as a fixture."""
    return tree_hash
