"""Recipe files: recipes/<name>.yaml holds a recipe whole; adding a file adds a recipe."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from uniret.cli import main
from uniret.config import load_params
from uniret.config.loader import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> Path:
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    return tmp_path / "params.yaml"


def test_a_recipe_file_fills_the_model_losses_and_training_sections(repo_root):
    raw = yaml.safe_load((repo_root / "recipes" / "led.yaml").read_text())
    params = load_params(repo_root / "params.yaml", "cpu").with_recipe("led")
    led = params.section("model").active()
    assert led.model.backbone == raw["model"]["backbone"] and led.teacher.arch == raw["teacher"]["arch"]
    assert led.model.doc_max_length == raw["profiles"]["cpu"]["model"]["doc_max_length"]  # the profile applies
    assert set(params.section("losses").recipes["led"]) == set(raw["losses"])
    plan = params.section("training").plan("led")
    assert (plan.stages, plan.serve_mode, plan.lexical_miner) == (raw["stages"], raw["serve_mode"], raw["lexical_miner"])
    assert plan.train["warmup"]["max_steps"] == raw["profiles"]["cpu"]["train"]["warmup"]["max_steps"]


def test_adding_a_file_adds_a_recipe(tmp_path, capsys):
    params_path = _project(tmp_path)
    recipe = yaml.safe_load((tmp_path / "recipes" / "clear.yaml").read_text())
    recipe["bm25_weight"] = 0.3
    (tmp_path / "recipes" / "clear_light.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))
    assert main(["params", "check", "--params", str(params_path)]) == 0
    assert "clear_light" in capsys.readouterr().out
    assert main(["params", "show", "--params", str(params_path), "--recipe", "clear_light", "--profile", "tiny",
                 "--section", "model"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["model"]["recipe"] == "clear_light"
    assert shown["model"]["recipes"]["clear_light"]["bm25_weight"] == 0.3
    assert shown["model"]["recipes"]["clear_light"]["model"]["doc_max_length"] == 96  # tiny profile of the file


def test_a_recipe_left_inline_in_params_yaml_is_refused(tmp_path):
    params_path = _project(tmp_path)
    raw = yaml.safe_load(params_path.read_text())
    raw["training"]["profiles"]["cpu"]["recipes"] = {"clear": {"train": {"warmup": {"max_steps": 5}}}}
    params_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError, match=r"training\.recipes: a recipe lives in recipes/<name>\.yaml"):
        load_params(params_path)


def test_show_prints_the_resolved_settings_of_the_recipe_and_profile(repo_root, capsys):
    assert main(["params", "show", "--params", str(repo_root / "params.yaml"), "--recipe", "unifier",
                 "--profile", "gpu"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    params = load_params(repo_root / "params.yaml", "gpu").with_recipe("unifier")
    assert list(shown["model"]["recipes"]) == ["unifier"]  # the active recipe only
    assert shown["model"]["recipes"]["unifier"]["model"]["arch"] == params.section("model").active().model.arch
    unifier = shown["losses"]["recipes"]["unifier"]
    assert unifier["warmup"]["flops"]["schedule"]["ramp_steps"] == 10000  # the gpu profile of recipes/unifier.yaml
    assert shown["training"]["recipes"]["unifier"]["serve_mode"] == "uni"
    assert shown["encoding"]["batch_size"] == 256  # params.yaml encoding, gpu profile


def test_a_params_copy_without_recipes_uses_uniret_recipes(tmp_path, monkeypatch, repo_root):
    """An installed package (the images) is away from the project: $UNIRET_RECIPES names the folder."""
    from uniret.config.recipe_files import RECIPES_ENV, recipes_dir

    params = tmp_path / "params.yaml"
    monkeypatch.delenv(RECIPES_ENV, raising=False)
    assert recipes_dir(params) == repo_root / "recipes"
    monkeypatch.setenv(RECIPES_ENV, str(tmp_path / "elsewhere"))
    assert recipes_dir(params) == tmp_path / "elsewhere"
    (tmp_path / "recipes").mkdir()  # recipes next to the params file win
    assert recipes_dir(params) == tmp_path / "recipes"
