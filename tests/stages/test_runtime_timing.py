"""Stage manifests time the whole stage run, not only the writing of its outputs."""

from __future__ import annotations

import json
import stat
import sys
import time
import types

from uniret.runtime import MANIFEST, stage_output
from uniret.stages import run_stage


def test_manifest_seconds_cover_work_done_before_the_outputs(tiny_ctx, monkeypatch):
    def run(ctx):
        time.sleep(0.3)  # stands for training or encoding, done before the output folder opens
        with stage_output(ctx, "fake", sections=[]) as (_, manifest):
            manifest["metrics"] = {"ok": 1}
        return manifest["metrics"]

    monkeypatch.setitem(sys.modules, "uniret.stages.fake", types.SimpleNamespace(run=run))
    run_stage("fake", tiny_ctx)
    manifest = json.loads((tiny_ctx.stage_dir("fake") / MANIFEST).read_text())
    assert manifest["seconds"] >= 0.3
    assert tiny_ctx.started is None  # the next stage on this context starts its own clock


def test_stage_output_folder_is_readable_by_others(tiny_ctx, monkeypatch):
    """Stage outputs are renamed from a temp folder: they must not keep mkdtemp's 0700."""
    def run(ctx):
        with stage_output(ctx, "fake", sections=[]) as (_, manifest):
            manifest["metrics"] = {"ok": 1}
        return manifest["metrics"]

    monkeypatch.setitem(sys.modules, "uniret.stages.fake", types.SimpleNamespace(run=run))
    run_stage("fake", tiny_ctx)
    mode = stat.S_IMODE(tiny_ctx.stage_dir("fake").stat().st_mode)
    assert mode & stat.S_IRGRP and mode & stat.S_IROTH and mode & stat.S_IXOTH
