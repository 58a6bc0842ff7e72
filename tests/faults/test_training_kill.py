"""kill -9 of a training stage at random points, then a rerun with resume: the same parameters as
an uninterrupted run (issue 12), and no temp folder of the killed run is left."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WAIT_S = 300.0  # hang guard only
KILL_SEED = 12  # the random kill points are reproducible
TRIALS = 1  # each trial is a killed run plus a resumed run (about a minute each on 2 busy cores)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory, repo_root, shared_data):
    """params (tiny, scifact only, 8 warmup steps, a checkpoint every 2) and artifacts with validate + bm25."""
    import yaml

    from uniret.runtime import make_context
    from uniret.stages import run_stage

    tmp = tmp_path_factory.mktemp("killtrain")
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["data"]["eval_datasets"] = ["scifact"]
    tiny_warmup = raw["training"]["profiles"]["tiny"]["warmup"]["train"]
    tiny_warmup.update(max_steps=8, checkpoint_every=2, log_every=1)
    params = tmp / "params.yaml"
    params.write_text(yaml.safe_dump(raw, sort_keys=False))
    ctx = make_context(params, "tiny", str(shared_data), tmp / "upstream")
    for stage in ("validate", "bm25"):
        run_stage(stage, ctx)
    return params, ctx.artifacts


def _warmup(params: Path, artifacts: Path, shared_data: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "uniret", "warmup", "--params", str(params), "--profile", "tiny",
                             "--data", str(shared_data), "--artifacts", str(artifacts)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _weights(artifacts: Path) -> dict:
    from uniret.models.factory import load_model

    model, _ = load_model(artifacts / "warmup" / "model")
    return {k: v.clone() for k, v in model.state_dict().items()}


def _copy(upstream: Path, dest: Path) -> Path:
    shutil.copytree(upstream, dest)
    return dest


def test_killed_warmup_resumes_to_the_same_parameters(upstream, tmp_path, shared_data):
    import torch

    params, base = upstream
    straight = _copy(base, tmp_path / "straight")
    proc = _warmup(params, straight, shared_data)
    _, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, err[-3000:]
    reference = _weights(straight)

    rng = random.Random(KILL_SEED)
    for trial in range(TRIALS):
        art = _copy(base, tmp_path / f"killed-{trial}")
        ckpts = art / ".train" / "warmup" / "checkpoints"
        proc = _warmup(params, art, shared_data)
        # a random point after the first checkpoint (so there is something to resume), mid-training
        wanted = rng.choice([1, 2, 3])
        deadline = time.monotonic() + WAIT_S
        while (len(list(ckpts.glob("*"))) if ckpts.is_dir() else 0) < wanted and proc.poll() is None:
            assert time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.5))
        killed = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        rerun = _warmup(params, art, shared_data)
        _, err = rerun.communicate(timeout=WAIT_S)
        assert rerun.returncode == 0, err[-3000:]
        if killed:
            assert "resumed from" in err or "stale temp" in err, err[-3000:]
        got = _weights(art)
        assert got.keys() == reference.keys()
        assert all(torch.equal(got[k], reference[k]) for k in reference), f"trial {trial}: parameters differ"
        assert not [p.name for p in art.iterdir() if p.name.startswith(".warmup.")], "stale temp folder left"
