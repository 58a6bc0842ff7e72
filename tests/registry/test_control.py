"""A rollback stays rolled back, and a pause freezes promotion: real registry folders, the real
promote/rollback, the CLI entry point (uniret.registry.control)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uniret.cli import main
from uniret.registry.control import PromotionHeld, read_control
from uniret.registry.errors import RegistryError
from uniret.registry.layout import CONTROL
from uniret.registry.pointer import read_pointer
from uniret.registry.promotion import promote, rollback


def _bundle(tmp: Path, name: str) -> Path:
    path = tmp / "src" / name
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"metrics": {"mean_active_terms_doc": 5.0}}))
    (path / "data.bin").write_text(name)
    return path


def _promote(root: Path, src: Path, version: str | None = None):
    return promote(root, src, evaluation={"macro": {}}, decision={"passed": True}, lineage={}, version=version,
                   dvc_push=False)


def _args(repo_root: Path, root: Path, *rest: str) -> list[str]:
    changes = rest[0] == "rollback" or rest[1] in ("pause", "resume", "lift")
    return [*rest, "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--registry", str(root),
            *(["--no-dvc-push"] if changes else [])]


@pytest.fixture
def two(tmp_path):
    """A registry with v1 then v2 promoted; the source folders of both."""
    root = tmp_path / "registry"
    a, b = _bundle(tmp_path, "a"), _bundle(tmp_path, "b")
    _promote(root, a, "v1")
    _promote(root, b, "v2")
    return root, a, b


def test_no_control_file_means_not_paused_and_nothing_rejected(tmp_path):
    control = read_control(tmp_path)
    assert control.paused is False and control.paused_at is None and control.rejected == {}
    assert control.refusal("anything") is None


def test_rollback_then_promote_of_the_same_content_is_refused_until_lifted(two):
    root, _, b = two
    back = rollback(root, dvc_push=False, reason="p95 doubled")
    assert back.version == "v1" and back.rejected.startswith("content ")
    rejection = next(iter(read_control(root).rejected.values()))
    assert rejection.version == "v2" and rejection.reason == "p95 doubled" and rejection.rolled_back_at

    # the same content again (a nightly rebuilding it on unchanged data): refused, naming the rollback and its time
    with pytest.raises(PromotionHeld) as refused:
        _promote(root, b)
    message = str(refused.value)
    assert "bundle v2" in message and rejection.rolled_back_at in message and "p95 doubled" in message
    assert "uniret registry lift v2" in message
    assert read_pointer(root)["version"] == "v1"
    assert sorted(p.name for p in (root / "bundles").iterdir()) == ["v1", "v2"]  # nothing published either

    # other content is not affected by the rejection
    c = _bundle(root.parent, "c")
    assert _promote(root, c, "v3").changed
    rollback(root, dvc_push=False)
    assert len(read_control(root).rejected) == 2

    # a person lifts it: the same content may be promoted again (the published v2, not a copy)
    from uniret.registry.control import lift

    assert lift(root, "v2").version == "v2"
    again = _promote(root, b)
    assert again.changed and again.version == "v2" and not again.published
    assert [r.version for r in read_control(root).rejected.values()] == ["v3"]


def test_pause_freezes_promotion_but_not_rollback(two, tmp_path):
    from uniret.registry.control import pause, resume

    root, a, _ = two
    control, changed = pause(root, "investigating latency")
    assert changed and control.paused and control.reason == "investigating latency" and control.paused_at
    assert pause(root, "other")[1] is False and read_control(root).reason == "investigating latency"

    with pytest.raises(PromotionHeld, match=r"promotion paused since .* \(investigating latency\)"):
        _promote(root, _bundle(tmp_path, "new"))
    assert read_pointer(root)["version"] == "v2"
    assert rollback(root, dvc_push=False).version == "v1"  # on-call can still roll back while paused

    before, after = resume(root)
    assert before.paused and not after.paused and not read_control(root).paused
    assert len(after.rejected) == 1  # the rollback's rejection survives the resume
    assert _promote(root, _bundle(tmp_path, "newer"), "v3").changed


def test_a_damaged_control_file_refuses_promotion_and_still_lets_a_rollback_through(two, tmp_path):
    root, _, _ = two
    (root / CONTROL).write_text('{"paused": null, "rejected": {"abc": {"version": 3}}}')
    with pytest.raises(RegistryError, match=rf"{CONTROL}: rejected.abc: field 'version'"):
        read_control(root)
    with pytest.raises(RegistryError, match=CONTROL):
        _promote(root, _bundle(tmp_path, "new"))
    back = rollback(root, dvc_push=False)
    assert back.version == "v1" and back.rejected.startswith("failed:")
    (root / CONTROL).write_text("{broken")
    with pytest.raises(RegistryError, match=r"invalid JSON"):
        read_control(root)


def test_cli_rollback_status_lift_pause_resume(two, repo_root, capsys, monkeypatch):
    monkeypatch.delenv("UNIRET_ADMIN_TOKEN", raising=False)
    monkeypatch.delenv("UNIRET_SERVE_URL", raising=False)
    root, _, _ = two
    assert main(_args(repo_root, root, "rollback", "--reason", "bad answers")) == 0
    out = capsys.readouterr().out
    assert "v2 -> v1" in out and "rejected: content" in out and "uniret registry lift v2" in out

    assert main(_args(repo_root, root, "registry", "status")) == 0
    out = capsys.readouterr().out
    assert "production: v1" in out and "rolled back from v2" in out and "allowed (not paused)" in out
    assert "rejected: v2" in out and "bad answers" in out

    assert main(_args(repo_root, root, "registry", "list")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("* v1") and "(rollback from v2)" in lines[0]
    assert "REJECTED (rolled back: bad answers)" in lines[1]

    assert main(_args(repo_root, root, "registry", "pause", "--reason", "freeze for the audit")) == 0
    assert "promotion paused since" in capsys.readouterr().out
    assert main(_args(repo_root, root, "registry", "status", "--json")) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["paused"]["reason"] == "freeze for the audit" and status["production"]["version"] == "v1"
    assert [r["version"] for r in status["rejected"].values()] == ["v2"]

    assert main(_args(repo_root, root, "registry", "lift", "nope")) == 1
    assert "no rejected bundle match 'nope'" in capsys.readouterr().err
    content_hash = next(iter(status["rejected"]))
    assert main(_args(repo_root, root, "registry", "lift", content_hash[:10])) == 0
    assert "lifted: v2" in capsys.readouterr().out
    assert main(_args(repo_root, root, "registry", "resume")) == 0
    assert "promotion resumed" in capsys.readouterr().out
    assert main(_args(repo_root, root, "registry", "resume")) == 0
    assert "not paused: nothing changed" in capsys.readouterr().out
    assert read_control(root).to_dict() == {"paused": None, "rejected": {}}
