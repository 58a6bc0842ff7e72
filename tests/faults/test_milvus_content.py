"""Issue 57 item 5: a Milvus collection is named and reused by content, not by what a manifest claims.

A hand-made copy of a published bundle (dense.faiss damaged, SHA256SUMS removed) must not take the
genuine bundle's collection name; a copy whose checksums were recomputed after the damage (so it
verifies) claims the genuine name through its manifest, and an export of it must not be taken as
"already exported" (nor the genuine export as current after it): the record's content differs."""

from __future__ import annotations

import shutil

import pytest

from uniret.config.milvus import MilvusConfig
from uniret.core.errors import EngineError
from uniret.registry.integrity import SUMS, write_checksums
from uniret.registry.promotion import promote


@pytest.fixture
def published(tiny_bundle, tmp_path):
    result = promote(tmp_path / "registry", tiny_bundle, evaluation=None, decision=None, lineage={}, dvc_push=False)
    return tmp_path / "registry" / "bundles" / result.version


def _damaged_copy(bundle, dest):
    shutil.copytree(bundle, dest)
    faiss_file = dest / "dense.faiss"
    data = bytearray(faiss_file.read_bytes())
    data[-8:] = bytes(8)  # the last vector's bytes: still a loadable index, other content
    faiss_file.write_bytes(bytes(data))
    return dest


def test_a_bundle_without_checksums_is_named_by_its_own_files(published, tmp_path):
    from uniret.milvus.bundles import bundle_collection

    cfg = MilvusConfig()
    genuine, _ = bundle_collection(cfg, published)
    copy = _damaged_copy(published, tmp_path / "copy")
    (copy / SUMS).unlink()
    assert bundle_collection(cfg, copy)[0] != genuine


def test_an_export_compares_content_not_names(published, tmp_path):
    from uniret.milvus.bundles import bundle_collection, export_bundle
    from uniret.milvus.client import connect

    cfg = MilvusConfig(insert_batch=64, search_batch=16)
    client = connect(str(tmp_path / "lite.db"))
    try:
        first = export_bundle(client, cfg, published, progress=False)
        assert first.changed is True
        copy = _damaged_copy(published, tmp_path / "copy")
        write_checksums(copy)  # verifies, and its manifest claims the genuine bundle's hash
        assert bundle_collection(cfg, copy)[0] == first.collection
        with pytest.raises(EngineError, match="holds bundle"):
            export_bundle(client, cfg, copy, progress=False)
        again = export_bundle(client, cfg, published, progress=False)  # the genuine one: really current
        assert again.changed is False and again.collection == first.collection
    finally:
        client.close()
