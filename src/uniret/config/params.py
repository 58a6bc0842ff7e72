"""The Params object: one params.yaml, one active profile, typed sections on demand."""

from __future__ import annotations

import dataclasses
import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from uniret.config.loader import (
    PROFILE_KEY,
    ConfigError,
    build,
    check_base_types,
    merge_overrides,
    read_params_file,
    resolve_section,
)
from uniret.config.recipe_files import (
    ATTACHED_KEY,
    attach_recipes,
    name_recipe_file,
    recipe_names,
    recipes_dir,
)
from uniret.utils.text import excerpt

T = TypeVar("T")

DEFAULT_PARAMS = "params.yaml"
PROFILE_ENV = "UNIRET_PROFILE"
# The profile of the base values (no section overrides it): always a known profile.
DEFAULT_PROFILE = "cpu"

# section name -> "module:Class". Each concern owns its config dataclass; this table lets
# `uniret params check` validate every section of a params file at once.
SECTIONS: dict[str, str] = {
    "data": "uniret.config.sections:DataConfig",
    "validate": "uniret.config.sections:ValidateConfig",
    "feedback": "uniret.config.feedback:FeedbackConfig",
    "simulate": "uniret.config.simulation:SimulateConfig",
    "canary": "uniret.config.canary:CanaryConfig",
    "bm25": "uniret.config.sections:Bm25Config",
    "evaluate": "uniret.config.sections:EvaluateConfig",
    "retrieval": "uniret.config.retrieval:RetrievalConfig",
    "index": "uniret.config.retrieval:IndexConfig",
    "gate": "uniret.config.gate:GateConfig",
    "registry": "uniret.config.registry:RegistryConfig",
    "report": "uniret.config.report:ReportConfig",
    "nightly": "uniret.config.nightly:NightlyConfig",
    "notify": "uniret.config.notify:NotifyConfig",
    "pipeline": "uniret.config.pipeline:PipelineConfig",
    "model": "uniret.config.models:ModelSection",
    "losses": "uniret.config.models:LossSection",
    "training": "uniret.config.recipes:TrainingSection",
    "serve": "uniret.config.serving:ServeConfig",
    "bench": "uniret.config.serving:BenchConfig",
    "encoding": "uniret.config.encoding:EncodingConfig",
    "distributed": "uniret.config.distributed:DistributedConfig",
    "opensearch": "uniret.config.export:OpenSearchExportConfig",
    "milvus": "uniret.config.milvus:MilvusConfig",
}


def section_class(name: str) -> type:
    """Import the dataclass registered for section `name`."""
    try:
        target = SECTIONS[name]
    except KeyError as exc:
        raise ConfigError(f"unknown params section {name!r}; known: {', '.join(sorted(SECTIONS))}") from exc
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


@dataclass
class Params:
    """A loaded params.yaml plus the active profile (tiny, cpu, gpu, ...)."""

    raw: dict[str, Any]
    profile: str
    path: Path | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def section(self, name: str, cls: type[T] | None = None) -> T:
        """The typed config of section `name` with the active profile applied."""
        if name in self._cache:
            return self._cache[name]
        obj = self._build(name, cls or section_class(name), checks=True)
        self._cache[name] = obj
        return obj

    def with_recipe(self, recipe: str) -> Params:
        """A copy of these params whose active recipe (model.recipe) is `recipe`."""
        if recipe not in recipe_names(self.raw):
            raise ConfigError(f"{self.path or 'params'}: no recipe {recipe!r}; known: {', '.join(recipe_names(self.raw))}")
        raw = dict(self.raw)
        raw["model"] = {**(raw.get("model") or {}), "recipe": recipe}
        return Params(raw=raw, profile=self.profile, path=self.path)

    def with_overrides(self, section: str, values: dict[str, Any]) -> Params:
        """A copy whose `section` resolves with `values` on top (the file is untouched).

        The values are merged into the active profile's entry, so they beat the profile's own
        overrides too (a tiny-profile gate floor must not mask a threshold given for this run).
        """
        if not values:
            return self
        raw = dict(self.raw)
        body = dict(raw.get(section) or {})
        profiles = dict(body.get(PROFILE_KEY) or {})
        profiles[self.profile] = merge_overrides(profiles.get(self.profile) or {}, values)
        body[PROFILE_KEY] = profiles
        raw[section] = body
        return Params(raw=raw, profile=self.profile, path=self.path)

    def check_types(self) -> None:
        """Keys and types of every known section present, with the active profile applied (no
        `validate()`, and a missing required key is left to the section's reader: a file written for
        one stage may hold only what that stage reads)."""
        for name in SECTIONS:
            if name not in self.raw or name in self._cache:
                continue
            try:
                self._build(name, section_class(name), checks=False)
            except ConfigError as exc:
                if "missing required key" not in str(exc):
                    raise

    def _build(self, name: str, cls: type[T], checks: bool) -> T:
        """Section `name` as `cls` with the active profile applied; `checks`: also its `validate()`. The
        base values' types are checked too: a wrong one must not hide behind the profile's override."""
        where = f"{self.path or 'params'}: {name}"
        raw = self.raw.get(name) or {}
        try:
            obj = build(cls, resolve_section(raw, self.profile, where, cls), where, checks=checks)
            check_base_types(cls, raw, where)
        except ConfigError as exc:
            raise ConfigError(name_recipe_file(str(exc), self.raw.get(ATTACHED_KEY))) from exc
        return obj

    def settings(self) -> dict[str, Any]:
        """Every section present, typed and resolved, as plain mappings (`uniret params show`)."""
        return {name: dataclasses.asdict(self.section(name)) for name in SECTIONS if name in self.raw}

    def resolved(self, name: str) -> dict[str, Any]:
        """A section's raw values with the profile applied (for manifests)."""
        return resolve_section(self.raw.get(name) or {}, self.profile, name)

    def check_all(self) -> list[str]:
        """Load every registered section present in the file; return their names."""
        unknown = sorted(set(self.raw) - set(SECTIONS) - {"profile", ATTACHED_KEY})
        if unknown:
            raise ConfigError(
                f"{self.path or 'params'}: unknown section(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(SECTIONS))}"
            )
        names = [n for n in SECTIONS if n in self.raw]
        for name in names:
            self.section(name)
        return names


def known_profiles(raw: dict[str, Any]) -> list[str]:
    """The closed set of profiles of a params file: those its sections name, its `profile:`, and cpu."""
    names = {DEFAULT_PROFILE}
    if isinstance(raw.get("profile"), str):
        names.add(raw["profile"])
    for section in raw.values():
        profiles = section.get(PROFILE_KEY) if isinstance(section, dict) else None
        if isinstance(profiles, dict):
            names.update(str(name) for name in profiles)
    return sorted(names)


def load_params(path: str | os.PathLike | None = None, profile: str | None = None) -> Params:
    """Load params.yaml and the recipe files (recipes/<name>.yaml, see config.recipe_files); the
    profile comes from the argument, $UNIRET_PROFILE, then the file.

    The profile must be one the file or a recipe knows (a typo such as `tyni` would otherwise run
    the base settings on the full data). The keys and types of every section present are checked
    (ConfigError names the key); a section's completeness and `validate()` when it is read.
    """
    path = Path(path or DEFAULT_PARAMS)
    raw = read_params_file(path)
    if ATTACHED_KEY not in raw:  # else a resolved copy that already holds its recipes
        raw = attach_recipes(raw, recipes_dir(path))
    chosen = profile or os.environ.get(PROFILE_ENV) or raw.get("profile") or DEFAULT_PROFILE
    if not isinstance(chosen, str):
        raise ConfigError(f"{path}: profile: expected a string, got {excerpt(chosen)}")
    known = known_profiles(raw)
    if chosen not in known:
        raise ConfigError(f"{path}: unknown profile {excerpt(chosen)}; known profiles: {', '.join(known)}")
    params = Params(raw=raw, profile=chosen, path=path)
    # the types of every section, not just of those this command reads: a value `uniret params check`
    # refuses is refused by every command (a BM25-only evaluate once took `retrieval.k: "5"`)
    params.check_types()
    return params
