"""Everything `create_app` needs, gathered from params.yaml and the command line."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from uniret.config.feedback import FeedbackConfig
from uniret.config.milvus import MilvusConfig
from uniret.config.params import Params
from uniret.config.retrieval import RetrievalConfig
from uniret.config.serving import ServeConfig
from uniret.serving.source import BundleSource

log = logging.getLogger("uniret.serving")

DEFAULT_TOKEN_ENV = "UNIRET_ADMIN_TOKEN"


@dataclass
class ServingSettings:
    """The `serve` section, where bundles come from, and the admin bearer token (None: reload disabled)."""

    serve: ServeConfig
    source: BundleSource
    admin_token: str | None = None
    retrieval: RetrievalConfig | None = None  # this process's params: picks the lexical backend
    engine: str = "local"  # local: the bundle's own structures in this process; milvus: a Milvus collection
    milvus: MilvusConfig | None = None  # the `milvus` section (uri from --uri) when engine is milvus
    feedback: FeedbackConfig | None = None  # the `feedback` section: UBI logging (None or log_dir null: off)
    canary_seed: int | None = None  # canary.seed: the interleaving draws (None: from the OS)


def settings_from_params(
    params: Params, registry: str | None = None, bundle: str | None = None, engine: str | None = None,
    uri: str | None = None, **overrides
) -> ServingSettings:
    """Settings from params (`serve`, `registry`); `bundle` (a folder) wins over `registry` and params.

    `overrides` replace fields of the `serve` section (e.g. host, port from the command line).
    `engine` milvus serves from the `milvus` section's engine (`uri` overrides its uri).
    The admin token comes from the env var named by registry.token_env, else serve.admin_token.
    """
    from dataclasses import replace

    from uniret.config.paths import resolve_path

    serve: ServeConfig = params.section("serve")
    serve = replace(serve, **{k: v for k, v in overrides.items() if v is not None})
    serve.validate()
    token_env = DEFAULT_TOKEN_ENV
    registry_root = None
    if "registry" in params.raw:
        reg = params.section("registry")
        token_env = reg.token_env
        registry_root = resolve_path(params, reg.root)
    if registry:
        registry_root = resolve_path(params, registry)
    if bundle:
        source = BundleSource(bundle=Path(bundle).expanduser().resolve())
    elif registry_root is not None:
        source = BundleSource(registry_root=registry_root)
    else:
        raise ValueError("serving needs --bundle or --registry (or a `registry` section in params.yaml)")
    token = os.environ.get(token_env) or serve.admin_token
    retrieval = params.section("retrieval") if "retrieval" in params.raw else None
    milvus = None
    if engine == "milvus":
        milvus = replace(params.section("milvus"), uri=uri or params.section("milvus").uri)
        if not milvus.uri:
            raise ValueError("serving from Milvus needs --uri (or params milvus.uri)")
        from uniret.milvus.client import is_lite

        if serve.workers > 1 and is_lite(milvus.uri):  # each worker would start its own Lite server on the file
            log.warning("serving one worker, not %d: the Milvus Lite file %s serves one process (a Milvus server "
                        "URI serves several)", serve.workers, milvus.uri)
            serve = replace(serve, workers=1)
    feedback = None
    if "feedback" in params.raw:
        feedback = params.section("feedback")
        feedback.validate()
        if feedback.log_dir:
            feedback = replace(feedback, log_dir=str(resolve_path(params, feedback.log_dir)))
    canary_seed = params.section("canary").seed if "canary" in params.raw else None
    return ServingSettings(serve=serve, source=source, admin_token=token, retrieval=retrieval,
                           engine=engine or "local", milvus=milvus, feedback=feedback, canary_seed=canary_seed)
