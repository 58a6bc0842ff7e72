"""Promote and roll back with real registry folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uniret.registry import bundles
from uniret.registry.errors import RegistryError
from uniret.registry.pointer import POINTER, read_pointer
from uniret.registry.promotion import promote, rollback


def _bundle(tmp: Path, name: str, payload: str) -> Path:
    """A minimal index bundle: manifest.json (with index metrics) and one data file."""
    path = tmp / "src" / name
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"metrics": {"mean_active_terms_doc": 99.0}}))
    (path / "dense.index").write_text(payload)
    return path


def _promote(root: Path, src: Path, version: str | None = None):
    return promote(root, src, evaluation={"macro": {"uni": {"ndcg@10": 0.5}}}, decision={"passed": True},
                   lineage={"data_version": "d1", "params_hash": "p1"}, version=version, dvc_push=False)


def _leftovers(root: Path) -> list[str]:
    """Temp files or folders left behind by an interrupted write."""
    return [p.name for p in root.rglob("*") if p.name.startswith((".tmp-", f".{POINTER}"))]


def test_promote_then_rollback(tmp_path):
    root = tmp_path / "registry"
    a, b = _bundle(tmp_path, "a", "AAA"), _bundle(tmp_path, "b", "BBB")

    first = _promote(root, a, version="v1")
    assert first.published and first.changed and first.previous is None
    assert read_pointer(root)["version"] == "v1" and read_pointer(root)["history"] == []

    second = _promote(root, b, version="v2")
    pointer = json.loads((root / POINTER).read_text())
    assert pointer["version"] == "v2" and pointer["bundle"] == "bundles/v2"
    assert [h["version"] for h in pointer["history"]] == ["v1"]
    assert second.previous == "v1"
    assert (root / "bundles" / "v2" / "dense.index").read_text() == "BBB"
    manifest = bundles.read_manifest(root / "bundles" / "v2")
    assert manifest["lineage"]["parent"] == "v1" and manifest["lineage"]["data_version"] == "d1"
    assert manifest["metrics"] == {"mean_active_terms_doc": 99.0}  # the index's own metrics are kept
    assert manifest["evaluation"]["macro"]["uni"]["ndcg@10"] == 0.5 and manifest["gate"] == {"passed": True}
    assert _leftovers(root) == []

    back = rollback(root, dvc_push=False)
    pointer = read_pointer(root)
    assert back.version == "v1" and back.previous == "v2"
    assert pointer["version"] == "v1" and pointer["rolled_back_from"] == "v2" and pointer["history"] == []
    assert (root / "bundles" / "v2").is_dir()  # withdrawn bundles stay published

    with pytest.raises(RegistryError, match="nothing to roll back to"):
        rollback(root, dvc_push=False)
    assert read_pointer(root)["version"] == "v1"


def test_rollback_skips_the_withdrawn_bundle(tmp_path):
    root = tmp_path / "registry"
    for i, payload in enumerate(("A", "B", "C"), start=1):
        _promote(root, _bundle(tmp_path, payload, payload), version=f"v{i}")
    assert rollback(root, dvc_push=False).version == "v2"
    assert rollback(root, dvc_push=False).version == "v1"  # not back to v3


def test_rollback_without_any_production_is_a_clear_error(tmp_path):
    with pytest.raises(RegistryError, match="registry not found"):
        rollback(tmp_path / "nowhere", dvc_push=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(RegistryError, match="no production bundle"):
        rollback(tmp_path / "empty", dvc_push=False)


def test_promoting_the_production_content_again_changes_nothing(tmp_path):
    root = tmp_path / "registry"
    src = _bundle(tmp_path, "a", "AAA")
    first = _promote(root, src)
    again = _promote(root, src)
    assert not again.changed and not again.published and again.version == first.version
    assert len(bundles.list_bundles(root)) == 1 and read_pointer(root)["history"] == []


def test_generated_versions_carry_the_content_hash(tmp_path):
    root = tmp_path / "registry"
    result = _promote(root, _bundle(tmp_path, "a", "AAA"))
    listed = bundles.list_bundles(root)
    assert [e["version"] for e in listed] == [result.version]
    assert result.version.endswith(listed[0]["bundle_hash"][: bundles.HASH_PREFIX])


def test_published_versions_are_immutable(tmp_path):
    root = tmp_path / "registry"
    _promote(root, _bundle(tmp_path, "a", "AAA"), version="v1")
    with pytest.raises(RegistryError, match="already exists"):
        bundles.publish(root, _bundle(tmp_path, "b", "BBB"), evaluation=None, decision=None, lineage={}, version="v1")
    assert (root / "bundles" / "v1" / "dense.index").read_text() == "AAA"
    assert _leftovers(root) == []


def test_bundle_without_manifest_is_refused(tmp_path):
    src = tmp_path / "broken"
    src.mkdir()
    with pytest.raises(RegistryError, match="manifest.json: bundle manifest not found"):
        _promote(tmp_path / "registry", src)
    assert read_pointer(tmp_path / "registry") is None


def test_corrupt_pointer_names_the_file(tmp_path):
    root = tmp_path / "registry"
    root.mkdir()
    (root / POINTER).write_text("{not json")
    with pytest.raises(RegistryError, match=r"production\.json: invalid JSON: .*line 1 column 2 \(char 1\)"):
        read_pointer(root)
