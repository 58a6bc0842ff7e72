"""TrainConfig as a nested `train:` field of stage sections, built by the params loader."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from uniret.config.loader import ConfigError, build, resolve_section
from uniret.config.training import TrainConfig

# the per-stage fields TrainConfig has no default for (params.yaml gives them per stage)
RUN = {"lr": 2e-5, "max_steps": 1000, "batch_size": 16, "warmup_steps": 100, "checkpoint_every": 500, "seed": 42}


@dataclass
class StageWithTraining:
    model: str = "splade-tiny"
    train: TrainConfig = field(default_factory=lambda: TrainConfig(**RUN))


def test_nested_train_mapping_with_profile_overrides():
    raw = {
        "train": {**RUN, "lr": 2.0e-5, "max_steps": 1000, "batch_size": 32, "warmup_steps": 100},
        "profiles": {"tiny": {"train": {"max_steps": 5, "batch_size": 4, "warmup_steps": 1}}},
    }
    values = resolve_section(raw, "tiny", "params.yaml: warmup")
    cfg = build(StageWithTraining, values, "params.yaml: warmup")
    assert isinstance(cfg.train, TrainConfig)
    assert (cfg.train.max_steps, cfg.train.batch_size, cfg.train.warmup_steps) == (5, 4, 1)
    assert cfg.train.lr == 2.0e-5  # kept from the base values
    assert cfg.train.amp == "auto"  # dataclass default


def test_unknown_key_names_the_path():
    with pytest.raises(ConfigError, match=r"warmup\.train: unknown key\(s\) learning_rate"):
        build(StageWithTraining, {"train": {"learning_rate": 1e-3}}, "warmup")


def test_wrong_type_and_inconsistent_values_name_the_field():
    with pytest.raises(ConfigError, match=r"warmup\.train\.max_steps: expected an integer"):
        build(StageWithTraining, {"train": {**RUN, "max_steps": "ten"}}, "warmup")
    with pytest.raises(ConfigError, match=r"warmup\.train: warmup_steps must be in"):
        build(StageWithTraining, {"train": {**RUN, "max_steps": 5, "warmup_steps": 6}}, "warmup")
    with pytest.raises(ConfigError, match=r"warmup\.train\.amp: must be one of"):
        build(StageWithTraining, {"train": {**RUN, "amp": "fp8"}}, "warmup")
    with pytest.raises(ConfigError, match="grad_accum must be >= 1"):
        build(StageWithTraining, {"train": {**RUN, "grad_accum": 0}}, "warmup")


def test_null_grad_norm_disables_clipping():
    cfg = build(StageWithTraining, {"train": {**RUN, "max_grad_norm": None}}, "warmup")
    assert cfg.train.max_grad_norm is None
