"""dvc.yaml lists params key by key: a change to one setting dirties only the stages that read it.

A temp git + dvc repo holds the repo's dvc.yaml, params.yaml, recipes and sources; every stage is
recorded with `dvc commit` over placeholder outputs (no stage runs), so `dvc status` answers
which stages a change invalidates. (The profile is the file's own: `dvc status` reads no profile.)
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

BM25_OUTS = ["negatives.jsonl", "dev_qrels.tsv", "train_run.trec", "indexes/part", "dev_runs/part", "runs/part"]


def _dvc(repo: Path, *args: str) -> str:
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([str(bin_dir / "dvc"), *args], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"dvc {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


ALWAYS_CHANGED = {"feedback"}  # its input (the closed log spans) lives outside the project: dvc always reruns it


def _stale(repo: Path) -> set[str]:
    """Stages `dvc status` reports changed, besides those it always reports."""
    out = _dvc(repo, "status", "--json")
    status = json.loads(out[out.index("{"):])
    assert all(status.get(stage) == ["always changed"] for stage in ALWAYS_CHANGED), status
    return set(status) - ALWAYS_CHANGED


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, shared_data):
    """A dvc repo whose every stage is recorded in dvc.lock (placeholder outputs) and up to date."""
    import shutil

    root = Path(__file__).resolve().parents[2]
    repo = tmp_path_factory.mktemp("keys") / "repo"
    repo.mkdir()
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(root / name, repo / name)
    for tree in ("src", "recipes", "expected"):
        shutil.copytree(root / tree, repo / tree, ignore=shutil.ignore_patterns("__pycache__"))
    _edit(repo, "data.root", str(shared_data))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    _dvc(repo, "init", "-q")
    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    for stage in stages:
        (repo / "artifacts" / stage).mkdir(parents=True)
        (repo / "artifacts" / stage / "placeholder").write_text("recorded\n")
    for name in BM25_OUTS:
        (repo / "artifacts" / "bm25" / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / "artifacts" / "bm25" / name).write_text("recorded\n")
    _dvc(repo, "commit", "--force", "--quiet")
    assert _stale(repo) == set()
    return repo


def _edit(repo: Path, path: str, value, file: str = "params.yaml") -> str:
    """Set `path` in `file`; returns the file's previous text (to restore it)."""
    before = (repo / file).read_text()
    raw = yaml.safe_load(before)
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node[key]
    node[last] = value
    (repo / file).write_text(yaml.safe_dump(raw, sort_keys=False))
    return before


CASES = [  # (key path, new value, file, the stages `dvc status` must report)
    ("training.mine.depth", 60, "params.yaml", {"mine"}),
    ("training.warmup.train.lr", 1.0e-4, "params.yaml", {"warmup"}),
    ("training.continual.clicks.source", "ips", "params.yaml", {"continual"}),  # serving's clicks mixed in
    ("training.evaluation.clear_depth", 500, "params.yaml", {"evaluate"}),
    ("encoding.batch_size", 8, "params.yaml", {"mine", "index", "bench", "evaluate"}),
    ("serve.port", 8100, "params.yaml", set()),  # serving reads it, no DAG stage
    # the active recipe's file: every stage that reads the recipe
    ("train.warmup.lr", 3.0e-5, "recipes/hybrid.yaml",
     {"warmup", "mine", "reranker", "continual", "distill", "index", "evaluate"}),
    ("bm25_weight", 0.3, "recipes/clear.yaml", {"evaluate"}),  # another recipe: scored by evaluate only
]


def test_one_setting_dirties_the_stages_that_read_it(recorded):
    for path, value, file, expected in CASES:
        before = _edit(recorded, path, value, file)
        assert _stale(recorded) == expected, f"{file}: {path}"
        (recorded / file).write_text(before)


def test_bm25_k1_dirties_bm25_and_its_dependants_not_validate(recorded):
    _edit(recorded, "bm25.k1", 1.2)
    assert _stale(recorded) == {"bm25", "index"}  # the stages that read bm25 settings
    # bm25 reruns with the new k1: its outputs change, and every stage reading them is dirty
    for name in ("negatives.jsonl", "runs/part"):
        (recorded / "artifacts" / "bm25" / name).write_text("rerun with k1 1.2\n")
    stale = _stale(recorded)
    assert {"bm25", "warmup", "mine", "continual", "index", "evaluate"} <= stale
    assert "validate" not in stale
