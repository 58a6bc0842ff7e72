"""When a stage runs under torchrun, and the command it gets (uniret.stages.launch)."""

from __future__ import annotations

import copy

import pytest

from uniret.config import Params
from uniret.config.loader import ConfigError
from uniret.runtime import StageContext
from uniret.stages import launch


def _ctx(tiny_ctx, **distributed) -> StageContext:
    raw = copy.deepcopy(tiny_ctx.params.raw)
    raw["distributed"] = distributed
    return StageContext(Params(raw=raw, profile="tiny", path=tiny_ctx.params.path), tiny_ctx.data_root,
                        tiny_ctx.artifacts)


def test_only_listed_training_stages_with_several_processes_relaunch(tiny_ctx, monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    assert not launch.wants_torchrun("warmup", _ctx(tiny_ctx))  # one process: runs in place
    two = _ctx(tiny_ctx, nproc_per_node=2, stages=["warmup", "distill"])
    assert launch.wants_torchrun("warmup", two) and launch.wants_torchrun("distill", two)
    assert not launch.wants_torchrun("reranker", two) and not launch.wants_torchrun("index", two)
    # a rank torchrun started runs the stage itself
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert not launch.wants_torchrun("warmup", two)


def test_torchrun_command_single_and_multi_node(tiny_ctx, tmp_path):
    one = launch.torchrun_command("warmup", _ctx(tiny_ctx, nproc_per_node=4), tmp_path / "p.yaml")
    assert one[1:4] == ["-m", "torch.distributed.run", "--nproc_per_node"] and one[4] == "4"
    assert "--standalone" in one and "--rdzv_endpoint" not in one
    tail = one[one.index("-m", 3):]
    assert tail[:2] == ["-m", "uniret"] and "warmup" in tail
    assert tail[tail.index("--params") + 1] == str(tmp_path / "p.yaml")
    assert tail[tail.index("--artifacts") + 1] == str(tiny_ctx.artifacts)
    multi = launch.torchrun_command("warmup", _ctx(tiny_ctx, nnodes=2, rdzv_endpoint="head:29400"), tmp_path / "p.yaml")
    assert "--standalone" not in multi and multi[multi.index("--rdzv_endpoint") + 1] == "head:29400"


def test_bad_distributed_params_are_named(tiny_ctx):
    with pytest.raises(ConfigError, match="rdzv_endpoint"):
        _ctx(tiny_ctx, nnodes=2).params.section("distributed")
    with pytest.raises(ConfigError, match="not training stages"):
        _ctx(tiny_ctx, stages=["index"]).params.section("distributed")


def test_stages_that_never_train_run_without_loading_torch(repo_root, shared_data, tmp_path):
    """validate, bm25, gate, promote and report import no torch: deciding where a stage runs must not
    load it for them (2-4 s of every such task's start on 2 cores, E59). A fresh interpreter, as a task's."""
    import subprocess
    import sys

    code = ("import sys\nfrom uniret.runtime import make_context\nfrom uniret.stages import launch\n"
            f"ctx = make_context({str(repo_root / 'params.yaml')!r}, 'tiny', {str(shared_data)!r}, {str(tmp_path)!r})\n"
            "for stage in ('validate', 'bm25', 'gate', 'promote', 'report'):\n"
            "    assert not launch.wants_torchrun(stage, ctx)\n"
            "print('torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
