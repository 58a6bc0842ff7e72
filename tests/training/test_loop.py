"""The training loop on a tiny real model: learning, exact resume, NaN guard, accumulation, metrics."""

from __future__ import annotations

import csv
import json
import math
import random

import pytest
import torch

from uniret.config.training import TrainConfig
from uniret.core.errors import StageFailed
from uniret.training import ShuffledBatches, TrainingDiverged, latest_checkpoint, load_checkpoint, train
from uniret.training.checkpoint import list_checkpoints
from uniret.training.schedules import warmup_linear_factor


def _cfg(**overrides) -> TrainConfig:
    base = dict(
        lr=0.05, weight_decay=0.0, max_steps=12, batch_size=4, grad_accum=1, warmup_steps=2,
        checkpoint_every=100, keep_checkpoints=2, log_every=1, seed=7, progress=False,
    )
    base.update(overrides)
    cfg = TrainConfig(**base)
    cfg.validate()
    return cfg


def _source(data, cfg: TrainConfig) -> ShuffledBatches:
    examples, collate = data
    return ShuffledBatches(examples, cfg.batch_size, collate, seed=cfg.seed)


def _rows(path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _full_batch_loss(model, data) -> float:
    examples, collate = data
    batch = collate(examples)
    with torch.no_grad():
        return float(((model(batch["x"]).squeeze(-1) - batch["y"]) ** 2).mean())


def test_loss_decreases_on_a_fixed_problem(tmp_path, regression_data, make_linear, losses):
    model = make_linear(0)
    before = _full_batch_loss(model, regression_data)
    cfg = _cfg(lr=0.1, max_steps=60, warmup_steps=5, log_every=10)
    result = train(model, _source(regression_data, cfg), losses["mse"], cfg, tmp_path)
    after = _full_batch_loss(model, regression_data)
    assert result.step == 60
    assert after < 0.05 * before, (before, after)
    rows = _rows(result.metrics)
    assert float(rows[-1]["loss"]) < float(rows[0]["loss"])


def test_resume_is_bit_identical_to_an_uninterrupted_run(tmp_path, regression_data, make_dropout_mlp, losses):
    cfg = _cfg(max_steps=12, grad_accum=2, checkpoint_every=5, log_every=2, keep_checkpoints=3)

    straight = make_dropout_mlp(0)
    ref = train(straight, _source(regression_data, cfg), losses["noisy_mse"], cfg, tmp_path / "straight")

    def crash_at_9(model, batch, step):
        if step == 9:
            raise RuntimeError("simulated crash")
        return losses["noisy_mse"](model, batch, step)

    out = tmp_path / "interrupted"
    with pytest.raises(RuntimeError, match="simulated crash"):
        train(make_dropout_mlp(0), _source(regression_data, cfg), crash_at_9, cfg, out)
    assert [s for s, _ in list_checkpoints(out / "checkpoints")] == [5]
    assert [r["step"] for r in _rows(out / "metrics" / "train.tsv")] == ["2", "4", "6", "8"]

    # A new process would build a new model (other init), a new source, and disturbed RNGs.
    random.random()
    torch.rand(3)
    resumed = make_dropout_mlp(99)
    result = train(resumed, _source(regression_data, cfg), losses["noisy_mse"], cfg, out, resume=True)

    assert result.step == 12
    ref_state, new_state = straight.state_dict(), resumed.state_dict()
    assert ref_state.keys() == new_state.keys()
    for key in ref_state:
        assert torch.equal(ref_state[key], new_state[key]), key
    assert _rows(result.metrics) == _rows(ref.metrics)
    assert [r["step"] for r in _rows(result.metrics)] == ["2", "4", "6", "8", "10", "12"]
    assert result.logs == ref.logs
    summary = json.loads(result.summary.read_text())
    assert summary["status"] == "completed" and summary["resumed_from_step"] == 5


def test_resume_without_checkpoint_starts_fresh_and_after_the_end_is_a_no_op(
    tmp_path, regression_data, make_linear, losses
):
    cfg = _cfg(max_steps=4)
    first = train(make_linear(0), _source(regression_data, cfg), losses["mse"], cfg, tmp_path, resume=True)
    assert first.step == 4 and first.checkpoint is not None
    again_model = make_linear(5)
    again = train(again_model, _source(regression_data, cfg), losses["mse"], cfg, tmp_path, resume=True)
    assert again.step == 4
    assert again.checkpoint == first.checkpoint
    assert torch.equal(again_model.weight, load_checkpoint(first.checkpoint)["model"]["weight"])
    assert len(_rows(again.metrics)) == 4


def test_nan_loss_aborts_and_keeps_the_last_good_checkpoint(tmp_path, regression_data, make_linear, losses):
    cfg = _cfg(max_steps=10, checkpoint_every=2, keep_checkpoints=2)

    def nan_at_5(model, batch, step):
        loss, logs = losses["mse"](model, batch, step)
        if step == 5:
            return loss * float("nan"), {**logs, "mse": float("nan"), "flops": 0.25}
        return loss, logs

    with pytest.raises(TrainingDiverged) as info:
        train(make_linear(0), _source(regression_data, cfg), nan_at_5, cfg, tmp_path)
    err = info.value
    assert isinstance(err, StageFailed)
    assert err.step == 5
    message = str(err)
    assert "step 5" in message and "loss" in message and "mse=nan" in message and "flops=0.25" in message
    assert "step-00000004.pt" in message

    assert [s for s, _ in list_checkpoints(tmp_path / "checkpoints")] == [2, 4]
    state = load_checkpoint(latest_checkpoint(tmp_path / "checkpoints"))
    assert state["step"] == 4
    for name, tensor in state["model"].items():
        assert torch.isfinite(tensor).all(), name
    assert [r["step"] for r in _rows(tmp_path / "metrics" / "train.tsv")] == ["1", "2", "3", "4"]
    summary = json.loads((tmp_path / "metrics" / "train_summary.json").read_text())
    assert summary["status"] == "diverged" and summary["step"] == 4
    assert summary["step_seconds"]["steps_timed"] == 4  # the four completed steps, not the diverged fifth


def test_non_finite_gradient_aborts_even_with_a_finite_loss(tmp_path, regression_data, make_linear):
    cfg = _cfg(max_steps=3)

    def sqrt_at_zero(model, batch, step):
        # d sqrt(u)/du is inf at u = 0: the loss is 0 but the gradient is NaN.
        loss = torch.sqrt((model.weight * 0).sum())
        return loss, {"sqrt": loss.item()}

    with pytest.raises(TrainingDiverged, match="step 1: gradient norm"):
        train(make_linear(0), _source(regression_data, cfg), sqrt_at_zero, cfg, tmp_path)
    assert list_checkpoints(tmp_path / "checkpoints") == []


def test_gradient_accumulation_matches_a_double_batch(tmp_path, regression_data, make_linear, losses):
    common = dict(max_steps=6, warmup_steps=0, max_grad_norm=None)
    accumulated = make_linear(3)
    cfg_a = _cfg(batch_size=4, grad_accum=2, **common)
    res_a = train(accumulated, _source(regression_data, cfg_a), losses["mse"], cfg_a, tmp_path / "a")
    single = make_linear(3)
    cfg_b = _cfg(batch_size=8, grad_accum=1, **common)
    res_b = train(single, _source(regression_data, cfg_b), losses["mse"], cfg_b, tmp_path / "b")

    for pa, pb in zip(accumulated.parameters(), single.parameters(), strict=True):
        assert torch.allclose(pa, pb, atol=1e-6), (pa, pb)
    rows_a, rows_b = _rows(res_a.metrics), _rows(res_b.metrics)
    for ra, rb in zip(rows_a, rows_b, strict=True):
        # grad_norm would double if the micro-batch losses were not divided by grad_accum.
        for key in ("loss", "grad_norm", "lr"):
            assert math.isclose(float(ra[key]), float(rb[key]), rel_tol=1e-5), (key, ra, rb)


def test_metrics_tsv_rows_columns_and_window_means(tmp_path, regression_data, make_linear, losses):
    cfg = _cfg(max_steps=7, log_every=3, warmup_steps=2)
    seen = []

    class Recorder:
        def log(self, step, values):
            seen.append((step, dict(values)))

    result = train(make_linear(0), _source(regression_data, cfg), losses["mse"], cfg, tmp_path, tracker=Recorder())
    assert result.metrics == tmp_path / "metrics" / "train.tsv"
    header = result.metrics.read_text().splitlines()[0].split("\t")
    assert header == ["step", "lr", "loss", "grad_norm", "mse", "step_echo"]
    rows = _rows(result.metrics)
    assert [r["step"] for r in rows] == ["3", "6", "7"]  # every log_every steps and the last step
    # Values are means over the steps since the previous row: step_echo averages the step numbers.
    assert [float(r["step_echo"]) for r in rows] == [2.0, 5.0, 7.0]
    for row in rows:
        expected_lr = cfg.lr * warmup_linear_factor(int(row["step"]), cfg.warmup_steps, cfg.max_steps)
        assert math.isclose(float(row["lr"]), expected_lr, rel_tol=1e-12)
        assert math.isclose(float(row["loss"]), float(row["mse"]), rel_tol=1e-6)
    assert [s for s, _ in seen] == [3, 6, 7]
    assert set(seen[0][1]) == {"train/lr", "train/loss", "train/grad_norm", "train/mse", "train/step_echo"}
    summary = json.loads(result.summary.read_text())
    assert summary["status"] == "completed" and summary["step"] == 7
    assert summary["last_logs"] == result.logs and result.logs["step_echo"] == 7.0


def test_checkpoints_hold_everything_needed_to_resume(tmp_path, regression_data, make_linear, losses):
    cfg = _cfg(max_steps=7, checkpoint_every=2, keep_checkpoints=2)
    result = train(make_linear(0), _source(regression_data, cfg), losses["mse"], cfg, tmp_path)
    assert [s for s, _ in list_checkpoints(tmp_path / "checkpoints")] == [6, 7]  # every 2 + the end, last 2 kept
    state = load_checkpoint(result.checkpoint)
    assert state["step"] == 7
    assert {"model", "optimizer", "scheduler", "rng", "data", "log_window", "config"} <= set(state)
    assert {"python", "numpy", "torch"} <= set(state["rng"])
    assert state["data"]["epoch"] == 0 and state["data"]["position"] == 28  # 7 batches of 4 served
    assert state["scheduler"]["last_epoch"] == 7


def test_fresh_run_replaces_old_checkpoints(tmp_path, regression_data, make_linear, losses):
    cfg = _cfg(max_steps=6, checkpoint_every=3)
    train(make_linear(0), _source(regression_data, cfg), losses["mse"], cfg, tmp_path)
    shorter = _cfg(max_steps=2, checkpoint_every=3)
    result = train(make_linear(0), _source(regression_data, shorter), losses["mse"], shorter, tmp_path)
    assert [s for s, _ in list_checkpoints(tmp_path / "checkpoints")] == [2]
    assert [r["step"] for r in _rows(result.metrics)] == ["1", "2"]


def test_reserved_log_names_are_refused(tmp_path, regression_data, make_linear):
    cfg = _cfg(max_steps=2)

    def bad(model, batch, step):
        loss = model(batch["x"]).pow(2).mean()
        return loss, {"loss": loss.item()}

    with pytest.raises(ValueError, match="reserved"):
        train(make_linear(0), _source(regression_data, cfg), bad, cfg, tmp_path)


def test_step_seconds_keep_the_first_step_apart():
    from uniret.training.loop import step_seconds

    assert step_seconds([]) is None
    assert step_seconds([0.5]) == {"step_seconds_first": 0.5, "steps_timed": 1}
    assert step_seconds([5.0, 1.0, 3.0, 2.0]) == {"step_seconds_first": 5.0, "steps_timed": 4,
                                                  "step_seconds_median": 2.0, "step_seconds_max": 3.0}
