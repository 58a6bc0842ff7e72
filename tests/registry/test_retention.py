"""Registry retention: production and N bundles of its rollback history stay, the rest goes, and
the registry still verifies and rolls back."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from uniret.cli import main
from uniret.registry.errors import RegistryError
from uniret.registry.pointer import BUNDLES, POINTER, read_pointer
from uniret.registry.promotion import promote, rollback
from uniret.registry.retention import PRUNED_PREFIX, prune
from uniret.registry.verify import verify_registry


def _bundle(tmp: Path, name: str) -> Path:
    path = tmp / "src" / name
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"metrics": {"mean_active_terms_doc": 9.0}}))
    (path / "dense.index").write_text(name)
    return path


def _promote(root: Path, tmp: Path, version: str, keep_history: int | None = None):
    return promote(root, _bundle(tmp, version), evaluation={}, decision={"passed": True}, lineage={},
                   version=version, dvc_push=False, keep_history=keep_history)


def _published(root: Path) -> list[str]:
    return sorted(p.name for p in (root / BUNDLES).iterdir())


def test_prune_keeps_production_and_its_history_then_verifies_and_rolls_back(tmp_path):
    root = tmp_path / "registry"
    for v in ("v1", "v2", "v3", "v4", "v5"):
        _promote(root, tmp_path, v)
    rollback(root, dvc_push=False)  # v5 withdrawn: production v4, history v3, v2, v1

    dry = prune(root, 1, dry_run=True)
    assert dry.kept == ["v4", "v3"] and dry.deleted == ["v1", "v2", "v5"] and dry.history_dropped == 2
    assert _published(root) == ["v1", "v2", "v3", "v4", "v5"]  # a dry run changes nothing
    assert [h["version"] for h in read_pointer(root)["history"]] == ["v3", "v2", "v1"]

    result = prune(root, 1)
    assert result.deleted == ["v1", "v2", "v5"] and not result.dry_run
    assert _published(root) == ["v3", "v4"]
    pointer = read_pointer(root)
    assert pointer["version"] == "v4" and [h["version"] for h in pointer["history"]] == ["v3"]
    assert verify_registry(root).ok
    assert rollback(root, dvc_push=False).version == "v3"
    with pytest.raises(RegistryError, match="nothing to roll back to"):
        rollback(root, dvc_push=False)


def test_promotion_applies_retention_after_its_flip(tmp_path):
    root = tmp_path / "registry"
    assert _promote(root, tmp_path, "v1", keep_history=1).pruned == []
    assert _promote(root, tmp_path, "v2", keep_history=1).pruned == []
    third = _promote(root, tmp_path, "v3", keep_history=1)
    assert third.pruned == ["v1"] and third.retention == "kept production + 1 of its history, deleted 1"
    assert [h["version"] for h in third.pointer["history"]] == ["v2"]
    assert _published(root) == ["v2", "v3"] and verify_registry(root).ok
    kept_all = _promote(root, tmp_path, "v4")
    assert kept_all.pruned == [] and kept_all.retention.startswith("skipped: registry.keep_history is null")
    assert _published(root) == ["v2", "v3", "v4"]


def test_prune_refuses_a_registry_without_production_and_a_negative_count(tmp_path):
    with pytest.raises(RegistryError, match="registry not found"):
        prune(tmp_path / "nowhere", 2)
    empty = tmp_path / "empty"
    (empty / BUNDLES / "orphan").mkdir(parents=True)
    with pytest.raises(RegistryError, match="refusing to prune"):
        prune(empty, 2)
    assert (empty / BUNDLES / "orphan").is_dir()
    root = tmp_path / "registry"
    _promote(root, tmp_path, "v1")
    with pytest.raises(RegistryError, match="keep_history must be a whole number >= 0"):  # a user error: one line
        prune(root, -1)


def test_a_killed_prune_leaves_only_unlisted_leftovers_that_the_next_one_removes(tmp_path):
    root = tmp_path / "registry"
    for v in ("v1", "v2"):
        _promote(root, tmp_path, v)
    # what a prune killed between its rename and its delete leaves behind
    os.rename(root / BUNDLES / "v1", root / BUNDLES / f"{PRUNED_PREFIX}v1-123")
    assert verify_registry(root).bundles.keys() == {"v2"}
    prune(root, 0)
    assert _published(root) == ["v2"] and read_pointer(root)["history"] == []
    assert json.loads((root / POINTER).read_text())["version"] == "v2"


def test_prune_command(tmp_path, repo_root, capsys):
    root = tmp_path / "registry"
    for v in ("v1", "v2", "v3"):
        _promote(root, tmp_path, v)
    args = ["--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--registry", str(root)]
    assert main(["registry", "prune", *args]) == 1  # params keep every bundle: the count must be given
    assert "give --keep-history N" in capsys.readouterr().err

    assert main(["registry", "prune", "--keep-history", "0", "--dry-run", *args]) == 0
    out = capsys.readouterr().out
    assert "kept: v3" in out and "would delete: v1, v2" in out and _published(root) == ["v1", "v2", "v3"]

    assert main(["registry", "prune", "--keep-history", "1", "--no-dvc-push", *args]) == 0
    out = capsys.readouterr().out
    assert "deleted: v1" in out and "dropped 1 older entries" in out and "dvc: skipped" in out
    assert _published(root) == ["v2", "v3"]
