"""`uniret rollback` and `uniret registry list|show` through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

from uniret.cli import main
from uniret.registry.pointer import read_pointer
from uniret.registry.promotion import promote


def _publish(root: Path, tmp: Path, version: str) -> None:
    src = tmp / f"src-{version}"
    src.mkdir()
    (src / "manifest.json").write_text(json.dumps({"metrics": {"mean_active_terms_doc": 5.0}}))
    (src / "data.bin").write_text(version)
    promote(root, src, evaluation={"macro": {}}, decision={"passed": True, "candidate": "uni"}, lineage={},
            version=version, dvc_push=False)


def _args(repo_root: Path, root: Path, *rest: str) -> list[str]:
    return [*rest, "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--registry", str(root)]


def test_rollback_command_restores_previous(tmp_path, repo_root, capsys, monkeypatch):
    monkeypatch.delenv("UNIRET_ADMIN_TOKEN", raising=False)
    root = tmp_path / "registry"
    _publish(root, tmp_path, "v1")
    _publish(root, tmp_path, "v2")
    assert main(_args(repo_root, root, "rollback", "--no-dvc-push")) == 0
    out = capsys.readouterr().out
    assert "v2 -> v1" in out and "notify: skipped" in out
    assert read_pointer(root)["version"] == "v1"

    assert main(_args(repo_root, root, "rollback", "--no-dvc-push")) == 1
    err = capsys.readouterr().err
    assert "uniret rollback: error:" in err and "nothing to roll back to" in err


def test_registry_list_and_show(tmp_path, repo_root, capsys):
    root = tmp_path / "registry"
    _publish(root, tmp_path, "v1")
    _publish(root, tmp_path, "v2")
    assert main(_args(repo_root, root, "registry", "list")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("  v1") and lines[1].startswith("* v2")

    assert main(_args(repo_root, root, "registry", "show")) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["production"]["version"] == "v2" and shown["bundle"]["lineage"]["parent"] == "v1"

    assert main(_args(repo_root, root, "registry", "show", "nope")) == 1
    assert "no bundle 'nope'" in capsys.readouterr().err
