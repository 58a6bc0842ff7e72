"""Typed configuration: params.yaml sections loaded into dataclasses, with profile overrides."""

from uniret.config.loader import ConfigError, build, read_params_file, resolve_section
from uniret.config.params import Params, load_params

__all__ = ["ConfigError", "Params", "build", "load_params", "read_params_file", "resolve_section"]
