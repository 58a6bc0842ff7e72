"""Connecting to Milvus: a server or cluster (http://host:19530) or Milvus Lite (a local `.db` file).

The same `pymilvus.MilvusClient` code reaches both; only the URI differs. Milvus Lite 2.5.1 (the
C++ engine, pinned in requirements.txt) runs one server process per data file, started by pymilvus
when a client opens it; it implements no alias, rename or property RPCs (uniret keeps those facts in
its catalog collection, uniret.milvus.catalog) and only the FLAT and IVF_FLAT dense indexes.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import sys
import types
from pathlib import Path

from uniret.core.errors import EngineError

log = logging.getLogger("uniret.milvus")

REMOTE_SCHEMES = ("http://", "https://", "tcp://", "unix:")
LITE_SUFFIX = ".db"


def is_lite(uri: str) -> bool:
    """Whether `uri` names a Milvus Lite data file rather than a server."""
    return not uri.startswith(REMOTE_SCHEMES)


def import_milvus_lite() -> None:
    """Import milvus_lite, whose 2.5.1 __init__ reads its own version through pkg_resources, which
    setuptools >= 81 no longer ships: a stand-in answering that one call is present only while
    milvus_lite imports, so no other package ever sees it."""
    if "milvus_lite" in sys.modules:
        return
    try:
        import pkg_resources  # noqa: F401 - setuptools < 81: the real one serves
    except ImportError:
        stand_in = types.ModuleType("pkg_resources")
        stand_in.DistributionNotFound = importlib.metadata.PackageNotFoundError
        stand_in.get_distribution = lambda name: types.SimpleNamespace(version=importlib.metadata.version(name))
        sys.modules["pkg_resources"] = stand_in
        try:
            import milvus_lite  # noqa: F401
        finally:
            if sys.modules.get("pkg_resources") is stand_in:
                del sys.modules["pkg_resources"]


def connect(uri: str, token: str | None = None, timeout_s: float = 30.0):
    """A MilvusClient on `uri`; EngineError naming the URI when it cannot be reached or opened."""
    from pymilvus import MilvusClient

    if not uri:
        raise EngineError("no Milvus URI: give --uri (http://host:19530 or a Milvus Lite file such as ./milvus.db) "
                          "or set params milvus.uri")
    if is_lite(uri):
        path = Path(uri).expanduser()
        if path.suffix != LITE_SUFFIX:
            raise EngineError(f"{uri}: not a Milvus URI: a server is http(s)://host:port, a Milvus Lite file ends "
                              f"in {LITE_SUFFIX}")
        if not path.parent.is_dir():
            raise EngineError(f"{uri}: the folder of this Milvus Lite file does not exist")
        uri = str(path.resolve())
        import_milvus_lite()
    try:
        return MilvusClient(uri=uri, token=token or "", timeout=timeout_s)
    except Exception as exc:  # noqa: BLE001 - pymilvus raises several types for one cause
        raise EngineError(f"{uri}: cannot reach Milvus ({_reason(exc)})") from exc


def connect_configured(cfg, uri: str | None = None):
    """A client on `uri` (CLI) or the `milvus` section's uri, with the token from its env var."""
    return connect(uri or cfg.uri, os.environ.get(cfg.token_env) or None, cfg.timeout_s)


def _reason(exc: BaseException) -> str:
    """pymilvus's message without its wrapper (`<MilvusException: (code=2, message=...)>`)."""
    return str(getattr(exc, "message", None) or exc).strip()


def unimplemented(exc: BaseException) -> bool:
    """Whether an RPC failed because this server does not implement it (Milvus Lite: aliases)."""
    code = getattr(exc, "code", None)
    status = code() if callable(code) else None
    return getattr(status, "name", "") == "UNIMPLEMENTED" or "UNIMPLEMENTED" in str(exc)


def engine_error(what: str, exc: BaseException) -> EngineError:
    """An EngineError saying what failed, with pymilvus's reason."""
    return EngineError(f"{what}: {_reason(exc)}")
