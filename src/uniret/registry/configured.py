"""The registry as configured in params.yaml: its root, the server to notify and its token."""

from __future__ import annotations

import os
from pathlib import Path

from uniret.config.params import Params
from uniret.config.paths import resolve_path
from uniret.config.registry import RegistryConfig, is_http_url
from uniret.core.errors import ConfigError
from uniret.registry.promotion import Serving


def registry_config(params: Params) -> RegistryConfig:
    return params.section("registry")


def registry_root(params: Params, override: str | None = None) -> Path:
    """The registry folder: `override` (CLI), else params `registry.root` relative to the params file."""
    return resolve_path(params, override or registry_config(params).root)


def serving_from(params: Params, serve_url: str | None = None) -> Serving:
    """Reload target: `serve_url` (CLI), else $UNIRET_SERVE_URL (registry.serve_url_env), else params
    registry.serve_url; the bearer token from the env var registry.token_env names."""
    cfg = registry_config(params)
    from_env = os.environ.get(cfg.serve_url_env) or None
    if from_env is not None and not is_http_url(from_env):
        raise ConfigError(f"${cfg.serve_url_env}: must start with http:// or https://, got {from_env!r}")
    return Serving(url=serve_url or from_env or cfg.serve_url, token=os.environ.get(cfg.token_env) or None,
                   timeout_s=cfg.notify_timeout_s)
