"""Resolution of the relative paths held in params.yaml (registry, bench file, lock file, ...)."""

from __future__ import annotations

from pathlib import Path

from uniret.config.params import Params


def params_dir(params: Params) -> Path:
    """The folder of the params file: the project root that relative params paths refer to."""
    return (params.path.parent if params.path else Path.cwd()).resolve()


def resolve_path(params: Params, value: str) -> Path:
    """An absolute path for `value`: kept when absolute, else taken relative to the params file."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else params_dir(params) / path
