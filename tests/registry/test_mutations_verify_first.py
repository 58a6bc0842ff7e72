"""Registry mutations verify first (issue 33): prune, promote and rollback check the pointer entries
they keep as `uniret registry verify` does, refuse with the reason and change nothing when that
fails, and never end with zero servable bundles. A dangling pointer (a hand edit, a restore gone
wrong) meets all three here, and every bundle survives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uniret.cli import main
from uniret.registry.errors import RegistryError
from uniret.registry.integrity import SUMS, verify_bundle
from uniret.registry.pointer import BUNDLES, POINTER, read_pointer
from uniret.registry.promotion import promote, rollback
from uniret.registry.retention import prune
from uniret.registry.verify import verify_registry


def _bundle(tmp: Path, name: str) -> Path:
    path = tmp / "src" / name
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"metrics": {}}))
    (path / "dense.index").write_text(name)
    return path


def _promote(root: Path, tmp: Path, version: str, keep_history: int | None = None):
    return promote(root, _bundle(tmp, version), evaluation={}, decision={"passed": True}, lineage={},
                   version=version, dvc_push=False, keep_history=keep_history)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".registry.lock"}


def _edit_pointer(root: Path, **changes) -> None:
    pointer = json.loads((root / POINTER).read_text())
    pointer.update(changes)
    (root / POINTER).write_text(json.dumps(pointer))


@pytest.fixture
def dangling(tmp_path) -> Path:
    """v1, v2, v3 published; production.json hand-edited to name v9, which does not exist."""
    root = tmp_path / "registry"
    for v in ("v1", "v2", "v3"):
        _promote(root, tmp_path, v)
    _edit_pointer(root, version="v9", bundle=f"{BUNDLES}/v9")
    return root


def _cli(root: Path, repo_root: Path, *args: str) -> int:
    return main([*args, "--params", str(repo_root / "params.yaml"), "--registry", str(root)])


def test_a_dangling_pointer_meets_prune_promote_and_rollback_and_every_bundle_survives(dangling, tmp_path, repo_root,
                                                                                      capsys):
    before = _tree(dangling)
    for keep in ("0", "1", "5"):
        assert _cli(dangling, repo_root, "registry", "prune", "--keep-history", keep, "--no-dvc-push") == 1
        err = capsys.readouterr().err
        assert "refusing to prune: names 'v9', which is not a published bundle; nothing was changed" in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert _tree(dangling) == before
    with pytest.raises(RegistryError, match="refusing to prune"):
        prune(dangling, 1, dry_run=True)  # a dry run says so too, instead of listing every bundle as deleted

    with pytest.raises(RegistryError, match="refusing to promote over the current production: names 'v9'"):
        _promote(dangling, tmp_path, "v4", keep_history=0)
    assert _tree(dangling) == before  # nothing published, the bogus entry did not enter the history

    # rollback withdraws production without keeping it: from a dangling one it is the repair
    back = rollback(dangling, dvc_push=False)
    assert (back.previous, back.version) == ("v9", "v2")
    assert sorted(p.name for p in (dangling / BUNDLES).iterdir()) == ["v1", "v2", "v3"]
    assert all(verify_bundle(dangling / BUNDLES / v) for v in ("v1", "v2", "v3"))
    assert verify_registry(dangling).ok
    assert prune(dangling, 0).deleted == ["v1", "v3"]  # a sound pointer prunes as before
    assert verify_registry(dangling).ok and read_pointer(dangling)["version"] == "v2"


def test_a_damaged_production_or_kept_history_bundle_stops_prune_and_promote(tmp_path):
    root = tmp_path / "registry"
    for v in ("v1", "v2", "v3"):
        _promote(root, tmp_path, v)
    (root / BUNDLES / "v2" / "dense.index").write_text("flipped")  # history[0] of production v3
    before = _tree(root)
    with pytest.raises(RegistryError, match=r"refusing to prune: names 'v2', which fails verification; "
                                            r"v2: failed verification \(changed: dense.index\)"):
        prune(root, 1)
    assert _tree(root) == before
    assert prune(root, 0).deleted == ["v1", "v2"]  # keeping only production, the damaged one may go

    (root / BUNDLES / "v3" / SUMS).unlink()  # production itself damaged
    before = _tree(root)
    with pytest.raises(RegistryError, match="refusing to promote over the current production: names 'v3', which fails"):
        _promote(root, tmp_path, "v4")
    with pytest.raises(RegistryError, match="refusing to prune: names 'v3'"):
        prune(root, 0)
    assert _tree(root) == before


@pytest.mark.parametrize("entry", [{"bundle": "bundles/v1"}, "v1", {"version": "../v1", "bundle": "bundles/../v1"}])
def test_a_malformed_history_entry_is_refused_in_one_line_not_a_traceback(tmp_path, repo_root, entry, capsys):
    root = tmp_path / "registry"
    for v in ("v1", "v2"):
        _promote(root, tmp_path, v)
    _edit_pointer(root, history=[entry])
    before = _tree(root)
    assert _cli(root, repo_root, "rollback", "--no-dvc-push") == 1
    assert _cli(root, repo_root, "registry", "prune", "--keep-history", "1", "--no-dvc-push") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("which is not a published bundle; nothing was changed" in line for line in err), err
    assert _tree(root) == before
    assert _cli(root, repo_root, "registry", "verify") == 1  # verify names the same entry


def test_a_history_that_is_not_a_list_is_a_pointer_error(tmp_path):
    root = tmp_path / "registry"
    _promote(root, tmp_path, "v1")
    _edit_pointer(root, history={"version": "v0"})
    with pytest.raises(RegistryError, match="field 'history' is not a list"):
        prune(root, 1)
    assert not verify_registry(root).ok


def test_keep_history_must_be_a_count(tmp_path, repo_root, capsys):
    root = tmp_path / "registry"
    _promote(root, tmp_path, "v1")
    for bad in ("-1", "two"):
        with pytest.raises(SystemExit) as exit_:
            _cli(root, repo_root, "registry", "prune", "--keep-history", bad)
        assert exit_.value.code == 2
        assert "--keep-history: expected a whole number >= 0" in capsys.readouterr().err
    assert (root / BUNDLES / "v1").is_dir()


def test_prune_leaves_alone_a_folder_uniret_did_not_publish(tmp_path, repo_root, capsys):
    root = tmp_path / "registry"
    for v in ("v1", "v2"):
        _promote(root, tmp_path, v)
    stray = root / BUNDLES / "backup-of-v0"
    stray.mkdir()
    (stray / "weights.bin").write_bytes(b"\x00\x01")
    assert _cli(root, repo_root, "registry", "prune", "--keep-history", "0", "--no-dvc-push") == 0
    out = capsys.readouterr().out
    assert "deleted: v1" in out and "left alone (not written by uniret): backup-of-v0" in out
    assert (stray / "weights.bin").read_bytes() == b"\x00\x01"
