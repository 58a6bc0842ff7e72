"""A real Milvus Lite (the C++ engine of milvus-lite 2.5.1, one server process per data file) holding
the tiny bundle's export, and a second bundle: the same files with another manifest (another content
hash, so another collection), for the alias and bad-input tests."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from uniret.config.milvus import MilvusConfig
from uniret.registry.integrity import write_checksums


@dataclass
class Lite:
    client: object
    uri: str
    cfg: MilvusConfig


def other_bundle(bundle: Path, dest: Path) -> Path:
    """A copy of `bundle` whose manifest differs (another content hash: another Milvus collection)."""
    shutil.copytree(bundle, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    (dest / "manifest.json").write_text(json.dumps({**manifest, "note": "second bundle for the Milvus tests"}))
    write_checksums(dest)  # a genuine second bundle: its own checksums, as the index stage records them
    return dest


@pytest.fixture(scope="session")
def lite(tmp_path_factory) -> Lite:
    from uniret.milvus.client import connect

    uri = str(tmp_path_factory.mktemp("milvus") / "lite.db")
    cfg = MilvusConfig(insert_batch=64, search_batch=16)
    client = connect(uri)
    yield Lite(client, uri, cfg)
    client.close()


@pytest.fixture(scope="session")
def exported(lite, tiny_bundle):
    """The tiny bundle exported into Milvus Lite (the first, writing, export)."""
    from uniret.milvus.bundles import export_bundle

    return export_bundle(lite.client, lite.cfg, tiny_bundle, progress=False)


@pytest.fixture(scope="session")
def second_bundle(tiny_bundle, tmp_path_factory) -> Path:
    return other_bundle(tiny_bundle, tmp_path_factory.mktemp("second") / "bundle")
