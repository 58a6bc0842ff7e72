"""The training loop under torchrun (2 CPU ranks, gloo): rank 0 alone writes, each global batch is
split between the ranks, and a job resumed after a crash ends bit-identical to an uninterrupted
one (each rank restores its own RNG stream: the model has dropout)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from uniret.training.batches import ShuffledBatches
from uniret.training.checkpoint import list_checkpoints, load_checkpoint

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("ddp_worker.py")


def _torchrun(out: Path, max_steps: int, resume: bool = False, crash_at: int = 0) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(WORKER),
           str(out), str(max_steps), "1" if resume else "0", str(crash_at)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)


def test_ranks_split_each_global_batch_in_order():
    examples = list(range(12))
    whole = ShuffledBatches(examples, 4, seed=3)
    ranks = [ShuffledBatches(examples, 4, seed=3) for _ in range(2)]
    for r, source in enumerate(ranks):
        source.shard(r, 2)
    for _ in range(7):  # crosses epochs
        assert ranks[0].next_batch() + ranks[1].next_batch() == whole.next_batch()
    assert ranks[0].state_dict() == ranks[1].state_dict() == whole.state_dict()
    with pytest.raises(ValueError, match="multiple of the process count"):
        ShuffledBatches(examples, 3).shard(0, 2)


def test_resumed_job_matches_an_uninterrupted_one(tmp_path):
    straight = tmp_path / "straight"
    done = _torchrun(straight, 6)
    assert done.returncode == 0, done.stderr[-3000:]

    interrupted = tmp_path / "interrupted"
    crashed = _torchrun(interrupted, 6, crash_at=5)
    assert crashed.returncode != 0 and "simulated crash" in crashed.stderr
    assert [s for s, _ in list_checkpoints(interrupted / "checkpoints")] == [2, 4]
    state = load_checkpoint(interrupted / "checkpoints" / "step-00000004.pt")
    assert len(state["rng_ranks"]) == 2  # one RNG state per rank, written by rank 0

    resumed = _torchrun(interrupted, 6, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    want, got = torch.load(straight / "final.pt"), torch.load(interrupted / "final.pt")
    for key in want:
        assert torch.equal(want[key], got[key]), key
    rows = (straight / "metrics" / "train.tsv").read_text()
    assert rows == (interrupted / "metrics" / "train.tsv").read_text()
    assert len(rows.splitlines()) == 7  # header + one row per step, written once (rank 0)
    # the two ranks drew different dropout masks: rank 1's RNG state differs from rank 0's
    final = load_checkpoint(straight / "checkpoints" / "step-00000006.pt")
    assert not torch.equal(final["rng_ranks"][0]["torch"], final["rng_ranks"][1]["torch"])
