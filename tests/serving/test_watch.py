"""Pointer watching: a reload when production.json names a new version, none otherwise, and a
version that failed to load is not retried on every tick."""

from __future__ import annotations

import json

from uniret.serving.source import BundleSource
from uniret.serving.watch import PointerWatcher


def _point(root, version):
    (root / "bundles" / version).mkdir(parents=True, exist_ok=True)
    (root / "production.json").write_text(json.dumps({"version": version, "bundle": f"bundles/{version}"}))


def test_reloads_only_on_a_new_version_and_skips_a_failed_one(tmp_path):
    live = {"version": None}
    calls = []

    def reload(path, version):
        calls.append(version)
        if version == "bad":
            raise RuntimeError("corrupt")
        live["version"] = version

    watcher = PointerWatcher(BundleSource(registry_root=tmp_path), lambda: live["version"], reload, 60.0)
    assert watcher.check_once() is False and calls == []  # nothing promoted yet
    _point(tmp_path, "v1")
    assert watcher.check_once() is True and live["version"] == "v1"
    assert watcher.check_once() is False  # unchanged pointer: no reload
    _point(tmp_path, "bad")
    assert watcher.check_once() is False and live["version"] == "v1"
    assert watcher.check_once() is False and calls == ["v1", "bad"]  # not retried every tick
    _point(tmp_path, "v2")
    assert watcher.check_once() is True and live["version"] == "v2"
    (tmp_path / "production.json").write_text("{broken")
    assert watcher.check_once() is False and live["version"] == "v2"
