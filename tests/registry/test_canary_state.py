"""The canary's state in a real registry folder: start publishes without moving production, every
refusal writes nothing, and each ending (promote, rollback, abandon) leaves the registry as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uniret.config.canary import CanaryConfig
from uniret.registry import canary
from uniret.registry.control import PromotionHeld, pause, read_control
from uniret.registry.errors import RegistryError
from uniret.registry.pointer import read_pointer
from uniret.registry.promotion import promote

CFG = CanaryConfig(share=0.25, min_impressions=10, max_hours=1.0)


def _bundle(tmp: Path, name: str, payload: str) -> Path:
    path = tmp / "src" / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "manifest.json").write_text(json.dumps({"metrics": {}}))
    (path / "dense.index").write_text(payload)
    return path


@pytest.fixture
def registry(tmp_path) -> Path:
    root = tmp_path / "registry"
    promote(root, _bundle(tmp_path, "prod", "P"), evaluation=None, decision=None, lineage={}, version="v1",
            dvc_push=False)
    return root


def _start(root: Path, tmp_path: Path, payload: str = "C") -> dict:
    return canary.start(root, _bundle(tmp_path, f"cand-{payload}", payload), CFG, evaluation=None, decision=None,
                        lineage={"night": 3})


def test_start_publishes_the_candidate_and_leaves_production(registry, tmp_path):
    state = _start(registry, tmp_path)
    assert read_pointer(registry)["version"] == "v1"
    assert state["status"] == "running" and state["production"] == "v1" and state["share"] == 0.25
    assert (registry / state["candidate_bundle"] / "dense.index").read_text() == "C"
    assert canary.running(registry) == json.loads((registry / "canary.json").read_text())
    assert not canary.expired(state)
    with pytest.raises(RegistryError, match="still running"):
        _start(registry, tmp_path, "D")


def test_a_published_bundle_is_tried_as_its_own_version_not_published_again(registry, tmp_path):
    """The previous production as the candidate (the loop's same-day interleaving): its registry folder is
    found by the hash recorded at publication, so no copy of it is published."""
    promote(registry, _bundle(tmp_path, "next", "N"), evaluation=None, decision=None, lineage={}, version="v2",
            dvc_push=False)
    state = canary.start(registry, registry / "bundles" / "v1", CFG, evaluation=None, decision=None, lineage={})
    assert state["candidate"] == "v1" and state["production"] == "v2"
    assert sorted(p.name for p in (registry / "bundles").iterdir()) == ["v1", "v2"]


def test_refusals_write_nothing(tmp_path):
    root = tmp_path / "registry"
    root.mkdir()
    with pytest.raises(RegistryError, match="no production bundle"):
        _start(root, tmp_path)
    promote(root, _bundle(tmp_path, "prod", "P"), evaluation=None, decision=None, lineage={}, version="v1",
            dvc_push=False)
    with pytest.raises(RegistryError, match="already is production"):
        canary.start(root, tmp_path / "src" / "prod", CFG, evaluation=None, decision=None, lineage={})
    pause(root, "freeze")
    with pytest.raises(PromotionHeld, match="paused"):
        _start(root, tmp_path)
    assert not (root / "canary.json").exists()


def test_promote_moves_production_with_the_reason(registry, tmp_path):
    state = _start(registry, tmp_path)
    ended = canary.finish(registry, "promote", "not worse", {"delta": 0.1})
    pointer = read_pointer(registry)
    assert pointer["version"] == state["candidate"] and pointer["reason"] == "canary: not worse"
    assert [h["version"] for h in pointer["history"]] == ["v1"]
    assert ended["status"] == "promoted" and ended["preference"] == {"delta": 0.1}
    assert canary.running(registry) is None
    with pytest.raises(RegistryError, match="no canary is running"):
        canary.finish(registry, "rollback", "again")


def test_rollback_keeps_production_and_rejects_the_content(registry, tmp_path):
    _start(registry, tmp_path)
    ended = canary.finish(registry, "rollback", "significantly worse")
    assert read_pointer(registry)["version"] == "v1" and ended["status"] == "rolled_back"
    (rejection,) = read_control(registry).rejected.values()
    assert rejection.reason == "canary: significantly worse"
    with pytest.raises(PromotionHeld, match="rolled back"):  # the next nightly cannot bring it back
        promote(registry, tmp_path / "src" / "cand-C", evaluation=None, decision=None, lineage={}, dvc_push=False)
    with pytest.raises(PromotionHeld):  # nor start its canary again
        canary.start(registry, tmp_path / "src" / "cand-C", CFG, evaluation=None, decision=None, lineage={})
    state = _start(registry, tmp_path, "E")  # a new candidate may start; the history keeps the last one
    assert [h["status"] for h in state["history"]] == ["rolled_back"]


def test_a_production_moved_under_the_canary_abandons_it(registry, tmp_path):
    _start(registry, tmp_path)
    promote(registry, _bundle(tmp_path, "hotfix", "H"), evaluation=None, decision=None, lineage={}, version="v9",
            dvc_push=False)
    ended = canary.finish(registry, "promote", "not worse")
    assert ended["status"] == "abandoned" and "production moved from v1 to v9" in ended["reason"]
    assert read_pointer(registry)["version"] == "v9" and read_control(registry).rejected == {}


def test_promotion_while_paused_is_held_and_the_canary_keeps_running(registry, tmp_path):
    _start(registry, tmp_path)
    pause(registry, "incident")
    with pytest.raises(PromotionHeld, match="keeps running"):
        canary.finish(registry, "promote", "not worse")
    assert canary.running(registry) is not None and read_pointer(registry)["version"] == "v1"
    assert canary.finish(registry, "abandon", "by hand")["status"] == "abandoned"


def test_a_damaged_file_is_an_error_naming_it(registry):
    (registry / "canary.json").write_text("{not json")
    with pytest.raises(RegistryError, match="canary.json: not a canary file"):
        canary.read_canary(registry)
    (registry / "canary.json").write_text(json.dumps({"status": "running"}))
    with pytest.raises(RegistryError, match="field 'candidate'"):
        canary.read_canary(registry)


def test_registry_status_shows_the_canary(registry, tmp_path, repo_root, capsys):
    from uniret.cli import main

    args = ["registry", "status", "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--registry",
            str(registry)]
    assert main(args) == 0
    assert "canary: none ever ran" in capsys.readouterr().out
    state = _start(registry, tmp_path)
    assert main(args) == 0
    assert f"canary: {state['candidate']} running since {state['started_at']} against v1 (25% of searches" in \
        capsys.readouterr().out
    canary.finish(registry, "rollback", "significantly worse")
    assert main([*args, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["canary"]
    assert shown["status"] == "rolled_back" and shown["reason"] == "significantly worse" and "history" not in shown
