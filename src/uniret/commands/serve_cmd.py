"""`uniret serve`: run the FastAPI search app under uvicorn over the production (or a given) bundle."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import signal
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from uniret.config.serving import ServeConfig

log = logging.getLogger("uniret.serving")

# With several workers uvicorn imports the app in each process: the CLI arguments travel in this env var.
SETTINGS_ENV = "UNIRET_SERVE_ARGS"


def _settings(spec: dict):
    from uniret.config import load_params
    from uniret.serving.settings import settings_from_params

    params = load_params(spec["params"], spec["profile"])
    return settings_from_params(params, spec["registry"], spec["bundle"], spec.get("engine"), spec.get("uri"),
                                host=spec["host"], port=spec["port"], workers=spec["workers"], modes=spec.get("modes"))


def app_from_env():
    """App factory for uvicorn worker processes (reads the CLI arguments from $UNIRET_SERVE_ARGS)."""
    from uniret.serving.app import create_app

    return create_app(_settings(json.loads(os.environ[SETTINGS_ENV])))


@contextlib.contextmanager
def _multiprocess_metrics():
    """A fresh, empty folder for the workers' metric files ($PROMETHEUS_MULTIPROC_DIR, which the
    spawned workers inherit), removed at exit: files left from an earlier run would be summed too."""
    from uniret.serving.metrics import MULTIPROC_ENV

    def leave(signum: int, _frame) -> None:
        raise SystemExit(128 + signum)

    folder = tempfile.mkdtemp(prefix="uniret-metrics-")
    os.environ[MULTIPROC_ENV] = folder
    # uvicorn re-raises a SIGTERM after its graceful shutdown, to this handler: an exit that runs the finally
    previous = signal.signal(signal.SIGTERM, leave)
    try:
        yield folder
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(folder, ignore_errors=True)


def uvicorn_options(cfg: ServeConfig) -> dict:
    """uvicorn.run's keywords common to one and several workers: the C parser and event loop, named so
    a missing one fails at start-up instead of falling back to pure Python (E86), and Nagle's algorithm
    off on every connection, which uvicorn's own socket for several workers leaves on (E66)."""
    from uniret.serving.tcp import NoDelayHttpProtocol

    return {"host": cfg.host, "port": cfg.port, "log_level": cfg.log_level, "http": NoDelayHttpProtocol,
            "loop": "uvloop"}


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from uniret.serving.app import create_app
    from uniret.serving.metrics import MULTIPROC_ENV

    spec = {k: getattr(args, k) for k in ("params", "profile", "registry", "bundle", "host", "port", "workers", "modes",
                                          "engine", "uri")}
    settings = _settings(spec)
    cfg = settings.serve
    if settings.admin_token is None:
        log.warning("no admin token (env or serve.admin_token): /admin/reload will refuse every call")
    engine = f", index structures in Milvus {settings.milvus.uri}" if settings.engine == "milvus" else ""
    print(f"uniret serve: {settings.source.describe()}{engine} on http://{cfg.host}:{cfg.port} ({cfg.workers} worker(s))",
          flush=True)
    common = uvicorn_options(cfg)
    if cfg.workers > 1:
        os.environ[SETTINGS_ENV] = json.dumps(spec)
        with _multiprocess_metrics():
            uvicorn.run("uniret.commands.serve_cmd:app_from_env", factory=True, workers=cfg.workers, **common)
    elif os.environ.get(MULTIPROC_ENV):
        # set by the caller: prometheus_client already writes files there; an earlier run's would be summed
        log.warning("$%s is set: this run's metric files go to a fresh folder instead", MULTIPROC_ENV)
        with _multiprocess_metrics():
            uvicorn.run(create_app(settings), **common)
    else:
        uvicorn.run(create_app(settings), **common)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="serve the production bundle over HTTP (FastAPI + uvicorn)",
        description="Serve /search, /healthz, /readyz, /metrics and /admin/reload over the production "
                    "bundle of the registry (or a bundle folder given with --bundle).",
    )
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    p.add_argument("--profile", default=None, help="params profile (default: $UNIRET_PROFILE, then params.yaml)")
    p.add_argument("--host", default=None, help="bind address (default: serve.host, 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default: serve.port)")
    p.add_argument("--workers", type=int, default=None, help="uvicorn worker processes (default: serve.workers)")
    p.add_argument("--modes", choices=("served", "all"), default=None,
                   help="modes offered: served = the default mode plus those with no transformer on the query "
                        "(no ONNX query graph for a hybrid_fast bundle); all = every mode (default: serve.modes)")
    p.add_argument("--engine", choices=("local", "milvus"), default="local",
                   help="local: the bundle's own index structures in this process; milvus: its Milvus collection "
                        "(`uniret export milvus`), the alias deciding the bundle (docs/milvus.md)")
    p.add_argument("--uri", default=None, help="with --engine milvus: http://host:19530 or a Milvus Lite file "
                                               "(default: params milvus.uri)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--registry", default=None, help="registry root; serves what its production.json names "
                                                      "(default: params registry.root)")
    src.add_argument("--bundle", default=None, help="serve this bundle folder instead of the registry's")
    p.set_defaults(func=_serve)
