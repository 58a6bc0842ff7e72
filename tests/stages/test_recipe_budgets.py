"""Per-recipe training overrides: training.recipes.<recipe>.train.<stage> on top of training.<stage>.train."""

from __future__ import annotations

import copy

import pytest

from uniret.config import Params
from uniret.config.loader import ConfigError
from uniret.runtime import StageContext
from uniret.stages.recipe_stage import active_recipe


def _ctx(tiny_ctx, recipe: str, train: dict) -> StageContext:
    raw = copy.deepcopy(tiny_ctx.params.raw)
    raw["model"]["recipe"] = recipe
    raw["training"]["recipes"][recipe]["train"] = train
    return StageContext(Params(raw=raw, profile="tiny"), tiny_ctx.data_root, tiny_ctx.artifacts)


def test_recipe_budget_overrides_steps_and_scales_warmup(tiny_ctx):
    ctx = _ctx(tiny_ctx, "clear", {"warmup": {"max_steps": 60, "lr": 2.0e-5}})
    base = ctx.params.section("training").warmup.train
    cfg = active_recipe(ctx).stage_config("warmup").train
    assert (cfg.max_steps, cfg.warmup_steps) == (60, round(base.warmup_steps * 60 / base.max_steps))
    assert cfg.checkpoint_every <= 60
    assert cfg.lr == 2.0e-5 and cfg.batch_size == base.batch_size  # the rest is the stage's
    # stages without a budget keep the stage config as it is
    assert active_recipe(ctx).stage_config("continual") == ctx.params.section("training").continual


def test_recipe_overrides_name_training_stages_and_train_keys_only(tiny_ctx):
    with pytest.raises(ConfigError, match="overrides name training stages"):
        active_recipe(_ctx(tiny_ctx, "clear", {"mine": {"max_steps": 10}}))
    with pytest.raises(ConfigError, match=r"train\.warmup: unknown key\(s\) max_step"):
        active_recipe(_ctx(tiny_ctx, "clear", {"warmup": {"max_step": 10}})).stage_config("warmup")
    with pytest.raises(ConfigError, match="warmup_steps must be"):
        active_recipe(_ctx(tiny_ctx, "clear", {"warmup": {"max_steps": 10, "warmup_steps": 50}})).stage_config("warmup")
