"""Atomic checkpoint files, keep-last-K and loading."""

from __future__ import annotations

import pytest
import torch

from uniret.training import checkpoint as ckpt


def _state(value: float) -> dict:
    return {"model": {"w": torch.full((2,), value)}}


def test_save_keeps_the_last_k_and_latest_is_newest(tmp_path):
    for step in (1, 2, 3, 4):
        ckpt.save_checkpoint(tmp_path, step, _state(step), keep=2)
    assert [s for s, _ in ckpt.list_checkpoints(tmp_path)] == [3, 4]
    latest = ckpt.latest_checkpoint(tmp_path)
    assert latest.name == "step-00000004.pt"
    loaded = ckpt.load_checkpoint(latest)
    assert loaded["step"] == 4 and torch.equal(loaded["model"]["w"], torch.full((2,), 4.0))


def test_a_failed_write_leaves_no_file_and_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    good = ckpt.save_checkpoint(tmp_path, 1, _state(1.0), keep=1)

    def broken_save(obj, fh):
        fh.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(ckpt.torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        ckpt.save_checkpoint(tmp_path, 2, _state(2.0), keep=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [good.name]
    assert ckpt.load_checkpoint(good)["step"] == 1


def test_temp_files_are_not_checkpoints(tmp_path):
    (tmp_path / ".step-00000009.pt.abc.tmp").write_bytes(b"half")
    assert ckpt.latest_checkpoint(tmp_path) is None
    assert ckpt.latest_checkpoint(tmp_path / "missing") is None


def test_garbage_is_refused_with_the_path(tmp_path):
    bad = tmp_path / "step-00000001.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="step-00000001.pt"):
        ckpt.load_checkpoint(bad)
    with pytest.raises(FileNotFoundError):
        ckpt.load_checkpoint(tmp_path / "nope.pt")


def test_load_model_weights(tmp_path):
    model = torch.nn.Linear(2, 1)
    path = ckpt.save_checkpoint(tmp_path, 7, {"model": model.state_dict()}, keep=1)
    other = torch.nn.Linear(2, 1)
    assert ckpt.load_model_weights(path, other) == 7
    assert torch.equal(other.weight, model.weight)
