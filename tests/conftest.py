"""Shared test fixtures: the real shared data, the repo's params.yaml, tiny-profile contexts."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

# Side effects stay in a temp dir; nothing reaches a hub or the W&B cloud.
_SANDBOX = Path(tempfile.mkdtemp(prefix="uniret-tests-"))
for key, value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OPENAI_API_KEY": "unused-by-uniret",
    "WANDB_MODE": "offline",
    "WANDB_DIR": str(_SANDBOX / "wandb"),
    "WANDB_DATA_DIR": str(_SANDBOX / "wandb-data"),
    "WANDB_CACHE_DIR": str(_SANDBOX / "wandb-cache"),
    "WANDB_CONFIG_DIR": str(_SANDBOX / "wandb-config"),
    "MPLCONFIGDIR": str(_SANDBOX / "mpl"),
    "MPLBACKEND": "Agg",
    "IR_DATASETS_HOME": str(_SANDBOX / "ir_datasets"),
    "HF_HOME": str(_SANDBOX / "hf"),
    "DVC_SITE_CACHE_DIR": str(_SANDBOX / "dvc-site"),
}.items():
    os.environ.setdefault(key, value)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "scifact" / "corpus.jsonl").is_file():
        pytest.fail(f"{SHARED_DATA} is missing: tests read the real collections from ../shared/data")
    return SHARED_DATA


@pytest.fixture
def tiny_ctx(tmp_path, shared_data):
    """A StageContext with the tiny profile, the repo's params.yaml and artifacts in tmp_path."""
    from uniret.runtime import make_context

    return make_context(REPO / "params.yaml", "tiny", str(shared_data), tmp_path / "artifacts")


@pytest.fixture(scope="session")
def tiny_bundle(tmp_path_factory, shared_data) -> Path:
    """A real index bundle of the tiny SciFact slice: validated slice (stand-in for the validate stage),
    the bm25 stage, a factory UnifieR checkpoint (SPLADE-tiny, untrained heads) as warmup, the index stage."""
    import copy

    from uniret.config import Params
    from uniret.config.models import ModelConfig
    from uniret.data.beir import BeirDataset
    from uniret.data.slicing import write_slice
    from uniret.models.factory import build_model, save_model
    from uniret.runtime import MANIFEST, VALIDATED_DATA, StageContext, make_context
    from uniret.stages import bm25, index
    from uniret.utils.files import atomic_write_json

    base = make_context(REPO / "params.yaml", "tiny", str(shared_data), tmp_path_factory.mktemp("bundle") / "artifacts")
    raw = copy.deepcopy(base.params.raw)
    raw["data"]["eval_datasets"] = ["scifact"]
    ctx = StageContext(Params(raw=raw, profile="tiny", path=base.params.path), base.data_root, base.artifacts)
    data = ctx.params.section("data")
    write_slice(BeirDataset(shared_data / "scifact", "scifact"), ctx.stage_dir("validate") / VALIDATED_DATA / "scifact",
                data.slice)
    atomic_write_json(ctx.stage_dir("validate") / MANIFEST, {"stage": "validate", "fixture": True})
    bm25.run(ctx)
    save_model(build_model(ModelConfig(arch="unifier", backbone="splade-tiny", query_max_length=32, doc_max_length=96)),
               ctx.stage_dir("warmup") / "model")
    index.run(ctx)
    return ctx.stage_dir("index") / "bundle"


@pytest.fixture
def dvc_project(shared_data):
    """make(dest, edit) -> a temp git + dvc repo holding dvc.yaml, params.yaml (tiny profile, the shared
    data; `edit(raw)` changes more), the recipe files and a copy of the sources, as `dvc repro` needs them."""
    import shutil
    import subprocess
    import sys

    import yaml

    def make(repo: Path, edit=None) -> Path:
        repo.mkdir(parents=True)
        for name in ("dvc.yaml", "params.yaml"):
            shutil.copy(REPO / name, repo / name)
        for tree in ("src", "recipes", "expected"):
            shutil.copytree(REPO / tree, repo / tree, ignore=shutil.ignore_patterns("__pycache__"))
        params = yaml.safe_load((repo / "params.yaml").read_text())
        params["profile"] = "tiny"
        params["data"]["root"] = str(shared_data)
        if edit is not None:
            edit(params)
        (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run([str(Path(sys.executable).parent / "dvc"), "init", "-q"], cwd=repo, check=True)
        return repo

    return make
