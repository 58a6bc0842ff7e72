"""Recipe files: recipes/<name>.yaml holds one recipe whole; params.yaml `model.recipe` picks one.

A recipe file has three parts and their profile overrides:
- the networks: `model`, `teacher`, `teacher_from_stage`, `bm25_weight` (config.models.RecipeConfig);
- `losses`: training stage -> term name -> loss term (config.models.LossTermConfig);
- the plan: `stages`, `mine_channels`, `lexical_miner`, `eval_modes`, `serve_mode`, `train`
  (config.recipes.RecipePlan);
- `profiles: {<profile>: {...any of the keys above...}}`.

Loading attaches every recipe file to the params mapping as the `model`, `losses` and `training`
sections' `recipes:` entries (and their profiles' `recipes:`), so the typed sections, their
profile merge and the manifests' resolved sections stay what they were. A user adds a recipe by
adding a file; a file name is the recipe's name.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
from pathlib import Path
from typing import Any

from uniret.config.loader import PROFILE_KEY, ConfigError, read_params_file

RECIPES_DIR = "recipes"  # next to params.yaml
RECIPES_ENV = "UNIRET_RECIPES"  # the recipe folder of an installed (non-editable) package, e.g. in the image
RECIPES_KEY = "recipes"  # the sections' entry the files fill
# a params mapping that already holds its recipes (a resolved copy, e.g. the one torchrun ranks
# read) names the folder they came from here; its recipes are not read again
ATTACHED_KEY = "recipes_attached"
# recipe-file part -> params section that holds it
PART_SECTIONS = {"networks": "model", "losses": "losses", "plan": "training"}


def _part_keys() -> dict[str, frozenset[str]]:
    from uniret.config.models import RecipeConfig
    from uniret.config.recipes import RecipePlan

    return {
        "networks": frozenset(f.name for f in dataclasses.fields(RecipeConfig)),
        "losses": frozenset({"losses"}),
        "plan": frozenset(f.name for f in dataclasses.fields(RecipePlan)),
    }


def recipes_dir(params_path: str | os.PathLike | None) -> Path:
    """recipes/ next to the params file; a params copy elsewhere (a temp folder) uses
    $UNIRET_RECIPES (set by the images, where the package is installed away from the project),
    else the project's own recipes/ (the folder above src/), where the recipe files live."""
    if params_path is not None:
        local = Path(params_path).resolve().parent / RECIPES_DIR
        if local.is_dir():
            return local
    if os.environ.get(RECIPES_ENV):
        return Path(os.environ[RECIPES_ENV])
    return Path(__file__).resolve().parents[3] / RECIPES_DIR


def read_recipe_files(folder: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """name -> (file, mapping) of every recipes/<name>.yaml, in name order."""
    if not folder.is_dir():
        raise ConfigError(f"{folder}: no recipes folder (one <name>.yaml per recipe)")
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise ConfigError(f"{folder}: no recipe files (<name>.yaml)")
    return {f.stem: (f, read_params_file(f)) for f in files}


def split_recipe(path: Path, raw: dict[str, Any], where: str = "") -> dict[str, dict[str, Any]]:
    """A recipe mapping's parts: {"networks": ..., "losses": ..., "plan": ...}; unknown keys name the file."""
    parts: dict[str, dict[str, Any]] = {p: {} for p in PART_SECTIONS}
    keys = _part_keys()
    for key, value in raw.items():
        part = next((p for p, names in keys.items() if key in names), None)
        if part is None:
            allowed = sorted(set().union(*keys.values()) | ({PROFILE_KEY} if not where else set()))
            raise ConfigError(f"{path}: {where}{key}: unknown recipe key; allowed: {', '.join(allowed)}")
        if part == "losses":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: {where}losses: expected a mapping of stage -> loss terms")
            parts["losses"] = value
        else:
            parts[part][key] = value
    return parts


def attach_recipes(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`raw` (not modified) with every recipe file of `folder` under its sections' `recipes:`."""
    for section in PART_SECTIONS.values():
        body = raw.get(section) if isinstance(raw.get(section), dict) else {}
        places = [body, *(p for p in (body.get(PROFILE_KEY) or {}).values() if isinstance(p, dict))]
        if any(RECIPES_KEY in place for place in places):
            raise ConfigError(f"{section}.{RECIPES_KEY}: a recipe lives in {RECIPES_DIR}/<name>.yaml, one file "
                              f"each (its model, losses, plan and profiles); move this entry there")
    out = copy.deepcopy(raw)
    for name, (path, recipe) in read_recipe_files(folder).items():
        base = {k: v for k, v in recipe.items() if k != PROFILE_KEY}
        _put(out, split_recipe(path, base), name, profile=None)
        profiles = recipe.get(PROFILE_KEY) or {}
        if not isinstance(profiles, dict):
            raise ConfigError(f"{path}: {PROFILE_KEY}: must be a mapping of profile name to overrides")
        for profile, override in profiles.items():
            if not isinstance(override, dict):
                raise ConfigError(f"{path}: {PROFILE_KEY}.{profile}: must be a mapping")
            _put(out, split_recipe(path, override, f"{PROFILE_KEY}.{profile}."), name, profile=str(profile))
    out[ATTACHED_KEY] = str(folder)
    return out


def _put(raw: dict[str, Any], parts: dict[str, dict[str, Any]], name: str, profile: str | None) -> None:
    """Place a recipe's parts under each section's recipes (or its profile's recipes)."""
    for part, section in PART_SECTIONS.items():
        if profile is not None and not parts[part]:
            continue  # a profile that leaves this part alone adds nothing to the section
        body = raw.setdefault(section, {})
        if profile is not None:
            body = body.setdefault(PROFILE_KEY, {}).setdefault(profile, {})
        body.setdefault(RECIPES_KEY, {})[name] = parts[part]


def name_recipe_file(message: str, folder: str | None) -> str:
    """`message` led by the recipe file it concerns (a `recipes.<name>` key path), if any."""
    match = re.search(r"\b" + RECIPES_KEY + r"\.([A-Za-z0-9_-]+)", message)
    if folder and match and (Path(folder) / f"{match.group(1)}.yaml").is_file():
        return f"{Path(folder) / match.group(1)}.yaml: {message}"
    return message


def recipe_names(raw: dict[str, Any]) -> list[str]:
    """The recipes a loaded params mapping holds (one per recipe file)."""
    return list((raw.get("model") or {}).get(RECIPES_KEY) or {})
