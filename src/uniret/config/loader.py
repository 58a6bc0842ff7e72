"""Typed loading of params.yaml sections.

params.yaml groups hyperparameters by stage. Each section may hold a `profiles:` mapping whose
entries (e.g. `tiny`, `cpu`, `gpu`) override the section's base values, so DVC can track one
section per stage and a BM25 change does not invalidate the training stages.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from uniret.core.errors import ConfigError
from uniret.utils.text import excerpt

T = TypeVar("T")

PROFILE_KEY = "profiles"


def read_params_file(path: str | os.PathLike) -> dict[str, Any]:
    """Read params.yaml as a mapping, with a clear error for unreadable or non-mapping files."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as fh:
            raw = yaml.safe_load(fh)
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: params file not found") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(raw).__name__}")
    return raw


REPLACE_KEY = "_replace"  # in a profile mapping: replace the base mapping instead of merging into it


def strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def _child_type(tp: Any, key: str) -> Any:
    """The declared type of `key` inside a value of type `tp` (None when unknown)."""
    tp = strip_optional(tp)
    if dataclasses.is_dataclass(tp):
        return typing.get_type_hints(tp).get(key)
    if typing.get_origin(tp) is dict and len(typing.get_args(tp)) == 2:
        return typing.get_args(tp)[1]
    return None


def _holds_named_configs(tp: Any) -> bool:
    """True for dict[str, <dataclass>]: a mapping whose entries are whole configs."""
    tp = strip_optional(tp)
    args = typing.get_args(tp)
    return typing.get_origin(tp) is dict and len(args) == 2 and dataclasses.is_dataclass(strip_optional(args[1]))


def merge_overrides(base: dict[str, Any], override: dict[str, Any], where: str = "", tp: Any = None) -> dict[str, Any]:
    """Deep-merge profile `override` into `base` (neither is modified); `tp` is base's config type.

    A mapping holding `_replace: true` replaces the base mapping (so `{_replace: true}` clears it).
    A profile may not add an entry to a mapping of named configs (dict[str, <dataclass>]) that the
    base lacks: a partial entry such as `{doc_max_length: 128}` would silently become a whole
    config built from defaults.
    """
    out = dict(base)
    for key, value in override.items():
        path = f"{where}.{key}" if where else str(key)
        if isinstance(value, dict) and value.get(REPLACE_KEY) is True:
            out[key] = {k: v for k, v in value.items() if k != REPLACE_KEY}
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_overrides(out[key], value, path, _child_type(tp, key))
        elif key not in out and _holds_named_configs(tp):
            raise ConfigError(
                f"{path}: the profile adds an entry the base section does not define; define it in the "
                f"base section (profiles only override), or give the whole mapping with `{REPLACE_KEY}: true`"
            )
        else:
            out[key] = value
    return out


def resolve_section(raw: dict[str, Any], profile: str | None, where: str, tp: Any = None) -> dict[str, Any]:
    """Return a section's values with the named profile's overrides applied (`tp`: its config class)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a mapping, got {type(raw).__name__}")
    values = {k: v for k, v in raw.items() if k != PROFILE_KEY}
    profiles = raw.get(PROFILE_KEY) or {}
    if not isinstance(profiles, dict):
        raise ConfigError(f"{where}.{PROFILE_KEY}: must be a mapping of profile name to overrides")
    if profile and profile in profiles:
        override = profiles[profile] or {}
        if not isinstance(override, dict):
            raise ConfigError(f"{where}.{PROFILE_KEY}.{profile}: must be a mapping")
        values = merge_overrides(values, override, f"{where}.{PROFILE_KEY}.{profile}", tp)
    return values


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce(value: Any, tp: Any, where: str, checks: bool = True) -> Any:
    """Check (and gently coerce int->float) a YAML value against a dataclass field type.

    `checks=False` skips the dataclasses' own `validate()` (types only).
    """
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where, checks)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(f"{where}: expected {_type_name(tp)}, got {excerpt(value)}")
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{where}: must be one of {list(args)}, got {excerpt(value)}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {type(value).__name__} {excerpt(value)}")
        item_tp = args[0] if args else Any
        items = [_coerce(v, item_tp, f"{where}[{i}]", checks) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
        val_tp = args[1] if len(args) == 2 else Any
        return {k: _coerce(v, val_tp, f"{where}.{k}", checks) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return build(tp, value, where, checks)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {type(value).__name__} {excerpt(value)}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {type(value).__name__} {excerpt(value)}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, got {excerpt(value)}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {type(value).__name__} {excerpt(value)}")
        return value
    return value


def build(cls: type[T], values: dict[str, Any], where: str, checks: bool = True) -> T:
    """Build dataclass `cls` from a mapping; unknown keys and wrong types name the key path.

    `checks=False` checks keys and types only, not the dataclass's `validate()`.
    """
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(values).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(fields))}"
        )
    kwargs = {}
    for name, value in values.items():
        kwargs[name] = _coerce(value, hints[name], f"{where}.{name}", checks)
    missing = [
        n
        for n, f in fields.items()
        if n not in kwargs
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING  # type: ignore[misc]
    ]
    if missing:
        raise ConfigError(f"{where}: missing required key(s) {', '.join(missing)}")
    obj = cls(**kwargs)
    check = getattr(obj, "validate", None) if checks else None
    if callable(check):
        try:
            check()
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    return obj


def check_base_types(cls: type, raw: dict[str, Any], where: str) -> None:
    """Type-check a section's base values alone (no profile applied, no `validate()`).

    A profile that overrides a base value would otherwise hide a wrong type in it until the
    section is loaded under another profile.
    """
    if not isinstance(raw, dict):
        return  # resolve_section reports a non-mapping section
    base = {k: v for k, v in raw.items() if k != PROFILE_KEY}
    try:
        build(cls, base, where, checks=False)
    except ConfigError as exc:
        if "missing required key" in str(exc):
            return  # a profile may supply a required key the base leaves out
        raise
