"""params.yaml `pipeline:` loads typed; bad values name the key."""

from __future__ import annotations

import pytest

from uniret.config.loader import ConfigError, build
from uniret.config.pipeline import PipelineConfig


def test_repo_params_pipeline_section(repo_root):
    from uniret.config import load_params

    cfg = load_params(repo_root / "params.yaml").section("pipeline")
    assert set(cfg.gpu_stages) == {"warmup", "mine", "reranker", "continual", "distill", "index"}
    assert cfg.resources_for("warmup").memory_limit == "32Gi"
    assert cfg.resources_for("validate") == cfg.default_resources  # no override: the default


@pytest.mark.parametrize(("values", "message"), [
    ({"gpu_stages": ["warmup", "trian"]}, "gpu_stages: unknown stage"),
    ({"resources": {"bm25": {"cpu_request": "two"}}}, "cpu_request: 'two' is not a CPU quantity"),
    ({"default_resources": {"memory_limit": "4GB"}}, "memory_limit: '4GB' is not a memory quantity"),
    ({"mount_path": "workdir"}, "mount_path must be absolute"),
    ({"gpus_per_task": 0}, "gpus_per_task must be >= 1"),
    ({"pvc_name": "x"}, "unknown key"),
])
def test_bad_pipeline_values(values, message):
    images = {"image": "registry.example/uniret:1-gpu", "serving_image": "registry.example/uniret:1"}  # required
    with pytest.raises(ConfigError, match=message):
        build(PipelineConfig, {**images, **values}, "params.yaml: pipeline")
