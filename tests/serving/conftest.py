"""A real `uniret serve` process on 127.0.0.1 over a registry holding two copies (v1, v2) of a real
tiny bundle; it starts cold (no production pointer) and is promoted to v1 by the fixture."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from uniret.bench.server import LOOPBACK, LocalServer
from uniret.registry.integrity import write_checksums
from uniret.registry.pointer import point_to, registry_lock

TOKEN = "test-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
STARTUP_TIMEOUT_S = 300.0


@dataclass
class Served:
    server: LocalServer
    registry: Path
    cold: dict  # statuses seen before any bundle was promoted

    auth = AUTH

    @property
    def addr(self) -> tuple[str, int]:
        return LOOPBACK, self.server.port

    def promote(self, version: str) -> None:
        """Point production.json at `version` (what `uniret promote` does before notifying)."""
        promote(self.registry, version)

    def publish_copy(self, bundle: Path, version: str) -> Path:
        return publish_copy(bundle, self.registry, version)


def publish_copy(bundle: Path, registry: Path, version: str) -> Path:
    """Copy `bundle` into <registry>/bundles/<version> with that version in its manifest and its
    checksums recorded (what `uniret promote` publishes)."""
    dest = registry / "bundles" / version
    shutil.copytree(bundle, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    (dest / "manifest.json").write_text(json.dumps({**manifest, "version": version}))
    write_checksums(dest)
    return dest


def promote(registry: Path, version: str) -> None:
    with registry_lock(registry):
        point_to(registry, version)


@pytest.fixture(scope="session")
def served(tiny_bundle, tmp_path_factory, repo_root):
    from uniret.bench.http_client import get_json, post_json

    registry = tmp_path_factory.mktemp("registry")
    for version in ("v1", "v2"):
        publish_copy(tiny_bundle, registry, version)
    server = LocalServer(["--registry", str(registry)], repo_root / "params.yaml", "tiny",
                         env={"UNIRET_ADMIN_TOKEN": TOKEN}, log_dir=tmp_path_factory.mktemp("serve-log"))
    server.start(STARTUP_TIMEOUT_S, wait_ready=False)
    try:
        cold = {
            "readyz": get_json(LOOPBACK, server.port, "/readyz")[0],
            "search": post_json(LOOPBACK, server.port, "/search", {"query": "cells", "k": 3})[0],
            "healthz": get_json(LOOPBACK, server.port, "/healthz")[0],
        }
        promote(registry, "v1")
        status, body = post_json(LOOPBACK, server.port, "/admin/reload", {"version": "v1"}, AUTH)
        assert status == 200, body
        yield Served(server, registry, cold)
    finally:
        server.stop()
