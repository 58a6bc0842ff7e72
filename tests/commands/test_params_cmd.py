"""`uniret params check`: the repo's params pass for every profile; a wrong key or type exits non-zero
naming the key path, wherever it sits (a section, a profile override, a recipe's train override)."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from uniret.cli import main

REPO = Path(__file__).resolve().parents[2]
RAW = yaml.safe_load((REPO / "params.yaml").read_text())
PROFILES = sorted({p for section in RAW.values() if isinstance(section, dict) for p in section.get("profiles") or {}})


def check(params: Path, profile: str) -> int:
    return main(["params", "check", "--params", str(params), "--profile", profile])


@pytest.mark.parametrize("profile", PROFILES)
def test_the_repo_params_pass_for_every_profile(profile, capsys):
    assert check(REPO / "params.yaml", profile) == 0
    out = capsys.readouterr().out
    assert f"profile {profile!r}: sections OK" in out
    for section in ("data", "bm25", "model", "losses", "training", "serve"):
        assert section in out


def _set(raw: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node[key]
    node[last] = value


BROKEN = [  # (key path to set, value, profile, text the error must hold)
    ("bm25.k3", 1.0, "cpu", "bm25: unknown key(s) k3"),
    ("bm25.k1", "high", "cpu", "bm25.k1: expected a number"),
    ("data.profiles.tiny.slice.max_doc", 3, "tiny", "data.slice: unknown key(s) max_doc"),
    ("training.warmup.train.max_steps", "many", "gpu", "training.warmup.train.max_steps: expected an integer"),
    ("retrieval.modes", ["dense", "nope"], "cpu", "retrieval: modes: unknown ['nope']"),
    ("bogus", {}, "cpu", "unknown section(s) bogus"),
]

RECIPE_BROKEN = [  # (key path in recipes/clear.yaml, value, profile, text the error must hold)
    ("losses.warmup.clear_margin.xii", 1.0, "cpu", "clear_margin: unknown key(s) xii"),
    # a recipe's train override: once only caught when its stage ran, now by the check
    ("train.warmup.lrr", 1.0e-5, "cpu", "recipes.clear.train.warmup: unknown key(s) lrr"),
    ("train.warmup.lr", "fast", "cpu", "recipes.clear.train.warmup.lr: expected a number"),
    # a recipe's profile override is checked under every profile, whichever is active
    ("profiles.tiny.model", {"doc_max_lenght": 9}, "cpu", "recipes.clear.model: unknown key(s) doc_max_lenght"),
    ("stagez", ["warmup"], "cpu", "stagez: unknown recipe key"),
]


@pytest.mark.parametrize(("path", "value", "profile", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_wrong_key_or_type_exits_non_zero_naming_it(tmp_path, capsys, path, value, profile, message):
    raw = copy.deepcopy(RAW)
    _set(raw, path, value)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert check(params, profile) != 0
    err = capsys.readouterr().err
    assert str(params) in err and message in err


def test_the_check_is_not_fooled_by_the_same_file_unchanged(tmp_path):
    """The harness above round-trips params.yaml through yaml; unchanged, it still passes."""
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(copy.deepcopy(RAW), sort_keys=False))
    assert check(params, "cpu") == 0


@pytest.mark.parametrize(("path", "value", "profile", "message"), RECIPE_BROKEN, ids=[b[0] for b in RECIPE_BROKEN])
def test_a_wrong_key_in_a_recipe_file_names_the_file(tmp_path, capsys, path, value, profile, message):
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    recipe = yaml.safe_load((tmp_path / "recipes" / "clear.yaml").read_text())
    _set(recipe, path, value)
    (tmp_path / "recipes" / "clear.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(copy.deepcopy(RAW), sort_keys=False))
    assert check(params, profile) != 0
    err = capsys.readouterr().err
    assert str(tmp_path / "recipes" / "clear.yaml") in err and message in err
