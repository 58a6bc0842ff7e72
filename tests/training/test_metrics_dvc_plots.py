"""The training metrics TSV is readable by the real `dvc plots`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from uniret.config.training import TrainConfig
from uniret.training import ShuffledBatches, train

DVC = Path(sys.executable).with_name("dvc")


@pytest.mark.skipif(not DVC.is_file(), reason="dvc is not installed next to this Python")
def test_dvc_plots_reads_the_training_metrics(tmp_path, regression_data, make_linear, losses):
    examples, collate = regression_data
    cfg = TrainConfig(lr=0.05, max_steps=6, batch_size=4, warmup_steps=1, checkpoint_every=500, log_every=2, seed=3,
                      progress=False)
    result = train(make_linear(0), ShuffledBatches(examples, 4, collate, seed=3), losses["mse"], cfg, tmp_path)

    # dvc's site cache defaults to /var/tmp/dvc: keep it in the test's folder.
    env = {**os.environ, "DVC_SITE_CACHE_DIR": str(tmp_path / ".dvc-site-cache")}

    def dvc(*args: str) -> str:
        done = subprocess.run([str(DVC), *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
        return done.stdout

    dvc("init", "--no-scm", "-q")
    shown = json.loads(dvc("plots", "show", "--json", "-x", "step", "-y", "loss", "metrics/train.tsv"))
    values = shown["data"]["metrics/train.tsv"][0]["content"]["data"]["values"]
    assert [int(v["step"]) for v in values] == [2, 4, 6]
    lines = result.metrics.read_text().splitlines()
    losses_in_file = [float(line.split("\t")[2]) for line in lines[1:]]
    assert [float(v["loss"]) for v in values] == losses_in_file
    assert {"lr", "grad_norm", "mse", "step_echo"} <= set(values[0])
