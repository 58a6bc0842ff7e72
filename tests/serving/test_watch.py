"""Pointer watching: a reload when production.json names a new version, none otherwise, and a
version that failed to load is not retried on every tick."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_a_refused_bundle_and_a_broken_pointer_are_reported_once_not_every_poll(tmp_path, caplog):
    live = {"version": "v1"}
    calls = []

    def reload(path, version):
        calls.append(version)
        raise RuntimeError("v2: failed verification (changed: docids.json)")

    watcher = PointerWatcher(BundleSource(registry_root=tmp_path), lambda: live["version"], reload, 60.0)
    _point(tmp_path, "v2")
    with caplog.at_level("INFO", logger="uniret.serving"):
        for _ in range(5):
            assert watcher.check_once() is False
    assert calls == ["v2"] and live["version"] == "v1"
    refused = [r for r in caplog.records if "reload of v2 failed" in r.getMessage()]
    assert len(refused) == 1 and "still serving v1" in refused[0].getMessage()

    caplog.clear()
    with caplog.at_level("INFO", logger="uniret.serving"):
        (tmp_path / "production.json").write_text("{broken")
        for _ in range(5):
            watcher.check_once()
        _point(tmp_path, "v1")  # rolled back to the live version: readable again, nothing to load
        assert watcher.check_once() is False
        _point(tmp_path, "v2")  # the pointer left v2 and came back: it is tried once more
        watcher.check_once()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("invalid JSON" in m for m in messages) == 1
    assert sum("readable again" in m for m in messages) == 1
    assert calls == ["v2", "v2"]


def test_polls_are_spread_by_jitter():
    import random

    from uniret.serving.watch import JITTER

    source = BundleSource(bundle=Path("unused"))  # the waits read no source
    watchers = [PointerWatcher(source, lambda: None, lambda p, v: None, 10.0, rng=random.Random(seed))
                for seed in (1, 2)]
    firsts = [w.next_wait(first=True) for w in watchers]
    assert all(0 <= f < 10.0 for f in firsts) and firsts[0] != firsts[1]  # replicas start out of step
    waits = [w.next_wait() for w in watchers for _ in range(200)]
    assert all(10.0 * (1 - JITTER) <= x <= 10.0 * (1 + JITTER) for x in waits)
    assert max(waits) - min(waits) > 10.0 * JITTER  # spread, not a constant
