"""The `training` section: recipe plans are checked, every profile of params.yaml loads."""

from __future__ import annotations

import pytest

from uniret.config.loader import ConfigError
from uniret.config.params import load_params
from uniret.config.recipes import RecipePlan, TrainingSection


@pytest.mark.parametrize("profile", ["tiny", "cpu", "gpu"])
def test_every_recipe_has_a_plan_and_the_section_loads(repo_root, profile):
    params = load_params(repo_root / "params.yaml", profile)
    training: TrainingSection = params.section("training")
    models = params.section("model")
    assert set(training.recipes) == set(models.recipes)
    for name in training.recipes:
        assert "warmup" in training.plan(name).stages


@pytest.mark.parametrize(
    "plan, message",
    [
        ({"stages": ["mine"]}, "warmup"),
        ({"stages": ["warmup", "continual"]}, "add mine"),
        ({"stages": ["warmup", "mine", "distill"]}, "reranker"),
        ({"stages": ["warmup", "polish"]}, "unknown stage"),
        ({"eval_modes": ["dense", "magic"]}, "unknown mode"),
        ({"train_doc_length": {"mine": 256}}, "name training stages"),
        ({"train_doc_length": {"continual": 0}}, "integers >= 1"),
    ],
)
def test_inconsistent_plans_are_rejected_with_the_reason(plan, message):
    with pytest.raises(ValueError, match=message):
        RecipePlan(**plan).validate()


def test_a_bad_window_is_a_config_error_naming_the_key(repo_root, tmp_path):
    text = (repo_root / "params.yaml").read_text().replace("    window_start: 3 ", "    window_start: 80 ")
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="training.*window_start"):
        load_params(path, "cpu").section("training")


def test_a_recipe_sets_a_stage_training_document_length(repo_root):
    """plan.train_doc_length overrides training.<stage>.doc_max_length for that recipe's stage only."""
    import dataclasses

    from uniret.stages.recipe_stage import ActiveRecipe

    params = load_params(repo_root / "params.yaml", "cpu")
    training: TrainingSection = params.section("training")
    models = params.section("model")
    plan = dataclasses.replace(training.plan("hybrid"), train_doc_length={"continual": 200})
    recipe = ActiveRecipe("hybrid", models.active(), plan, training)
    assert training.continual.doc_max_length != 200
    assert recipe.stage_config("continual").doc_max_length == 200
    assert recipe.stage_config("warmup").doc_max_length == training.warmup.doc_max_length
    # the recipe's train block still applies beside it
    assert recipe.stage_config("continual").train.lr == plan.train["continual"]["lr"]
