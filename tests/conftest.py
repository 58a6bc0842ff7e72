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
    from uniret.stages.runtime import make_context

    return make_context(REPO / "params.yaml", "tiny", str(shared_data), tmp_path / "artifacts")
