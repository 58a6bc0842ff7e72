"""The W&B wrapper: offline run files inside the given folder, never HOME; no-op when disabled."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from uniret.config.tracking import TrackingConfig
from uniret.config.training import TrainConfig
from uniret.tracking import NullTracker, WandbLogger, open_tracker
from uniret.tracking.wandb_logger import resolve_mode, wandb_dirs
from uniret.training import ShuffledBatches, train


@pytest.fixture
def fake_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_offline_run_lives_in_the_given_folder(tmp_path, fake_home, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)  # offline must be the default by itself
    before = {k: os.environ.get(k) for k in wandb_dirs(tmp_path)}
    folder = tmp_path / "tracking"
    with WandbLogger(folder, project="uniret-test", name="probe", config={"lr": 0.1}) as tracker:
        assert tracker.mode == "offline"
        tracker.log(1, {"uniret_probe_metric": 0.5})
        tracker.log(2, {"uniret_probe_metric": 0.25})
        tracker.summary({"uniret_probe_final": 1.0})
        run_dir = tracker.run_dir
    assert run_dir.is_dir() and run_dir.is_relative_to(folder)
    assert run_dir.name.startswith("offline-run-")
    run_files = list(run_dir.glob("run-*.wandb"))
    assert len(run_files) == 1
    assert b"uniret_probe_metric" in run_files[0].read_bytes()
    assert list(fake_home.iterdir()) == []  # nothing written under HOME
    assert {k: os.environ.get(k) for k in before} == before  # env restored by finish()


def test_training_loop_logs_to_wandb(tmp_path, fake_home):
    examples = [(torch.tensor([float(i)]), torch.tensor(2.0 * i)) for i in range(8)]

    def collate(batch):
        return torch.stack([e[0] for e in batch]), torch.stack([e[1] for e in batch])

    def loss_fn(model, batch, step):
        x, y = batch
        loss = ((model(x).squeeze(-1) - y) ** 2).mean()
        return loss, {"active_terms_q": 3.0}

    cfg = TrainConfig(lr=0.01, max_steps=3, batch_size=2, warmup_steps=0, checkpoint_every=500, log_every=1, seed=42,
                      progress=False)
    tracker = open_tracker(TrackingConfig(mode="offline"), tmp_path / "wb", name="loop")
    try:
        train(torch.nn.Linear(1, 1), ShuffledBatches(examples, 2, collate), loss_fn, cfg, tmp_path / "out", tracker=tracker)
    finally:
        tracker.finish()
    data = next(tracker.run_dir.glob("run-*.wandb")).read_bytes()
    assert b"train/loss" in data and b"train/active_terms_q" in data


def test_disabled_tracking_is_a_null_tracker(tmp_path, monkeypatch):
    assert isinstance(open_tracker(TrackingConfig(enabled=False), tmp_path), NullTracker)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    tracker = open_tracker(TrackingConfig(), tmp_path)
    assert isinstance(tracker, NullTracker)
    tracker.log(1, {"x": 1.0})
    tracker.finish()
    assert list(tmp_path.iterdir()) == []


def test_mode_resolution(monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert resolve_mode(None) == "offline"
    assert resolve_mode("online") == "online"
    monkeypatch.setenv("WANDB_MODE", "offline")  # the environment overrides the config
    assert resolve_mode("online") == "offline"
    monkeypatch.delenv("WANDB_MODE")
    with pytest.raises(ValueError, match="offline, online or disabled"):
        resolve_mode("dryrun")


def test_importing_tracking_and_training_does_not_import_wandb():
    code = "import sys, uniret.tracking, uniret.training; print('wandb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_finishing_one_run_leaves_another_open_run_working(tmp_path, fake_home):
    first = WandbLogger(tmp_path / "a", project="uniret-test")
    second = WandbLogger(tmp_path / "b", project="uniret-test")
    first.log(1, {"uniret_first_metric": 1.0})
    first.finish()
    second.log(1, {"uniret_second_metric": 2.0})  # the shared W&B service must still be up
    second.finish()
    assert b"uniret_first_metric" in next(first.run_dir.glob("run-*.wandb")).read_bytes()
    assert b"uniret_second_metric" in next(second.run_dir.glob("run-*.wandb")).read_bytes()
