"""The model-agnostic training loop: AdamW, warmup/decay LR, grad accumulation and clipping,
atomic checkpoints with exact resume, NaN guard, metrics TSV, progress bar and tracker logging.

Every training stage (warmup, reranker, continual, distill) calls `train` with its own model,
batch source and `compute_loss(model, batch, step) -> (loss, logs)`.

Under torchrun (uniret.training.distributed) the same loop runs data-parallel: the model is
wrapped in DistributedDataParallel, each rank takes its slice of every global batch, logged values
are averaged over ranks, and rank 0 alone writes checkpoints (with every rank's RNG state, so a
resumed job continues exactly), metrics and the summary.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from uniret.config.distributed import DistributedConfig
from uniret.config.training import TrainConfig
from uniret.tracking.base import Tracker
from uniret.training import distributed as dist_rt
from uniret.training.batches import BatchSource
from uniret.training.checkpoint import (
    checkpoint_name,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from uniret.training.device import DevicePlan, plan_device, to_device
from uniret.training.errors import TrainingDiverged
from uniret.training.metrics import FIRST_COLUMNS, LogWindow, MetricsTsv
from uniret.training.optim import build_optimizer
from uniret.training.schedules import warmup_linear_schedule
from uniret.training.seeding import capture_rng_state, restore_rng_state, seed_everything
from uniret.utils.files import atomic_write_json

log = logging.getLogger("uniret.training")

ComputeLoss = Callable[[nn.Module, Any, int], tuple[torch.Tensor, dict[str, float]]]

CHECKPOINTS = "checkpoints"
METRICS_TSV = Path("metrics") / "train.tsv"
SUMMARY_JSON = Path("metrics") / "train_summary.json"
# Settings that may change between a run and its resumption without affecting results.
_RESUME_NEUTRAL = {"progress", "num_threads"}


@dataclass
class TrainResult:
    """Where a run ended and what it left behind."""

    step: int
    logs: dict[str, float]  # the last metrics row (window means), without `step`
    checkpoint: Path | None
    metrics: Path
    summary: Path


@dataclass
class _Session:
    """The mutable pieces of one `train` call."""

    model: nn.Module
    data: BatchSource
    cfg: TrainConfig
    plan: DevicePlan
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    window: LogWindow
    ckpt_dir: Path
    ranks: dist_rt.Ranks = dataclasses.field(default_factory=dist_rt.Ranks)
    forward_model: nn.Module | None = None  # what compute_loss calls: the DDP wrapper when distributed
    last_checkpoint: Path | None = None
    step: int = 0  # optimizer steps completed
    step_times: list[float] = dataclasses.field(default_factory=list)  # wall seconds of each step of this call

    def state(self, rng_ranks: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": rng_ranks[0],
            "rng_ranks": rng_ranks,  # one per rank: a resumed job restores each rank's own stream
            "data": dict(self.data.state_dict()),
            "log_window": self.window.state_dict(),
            "config": dataclasses.asdict(self.cfg),
        }

    def checkpoint(self, step: int, logs: dict[str, float]) -> None:
        # Guard: never persist a model that went non-finite (e.g. an inf LR on finite grads).
        for name, param in self.model.named_parameters():
            if not torch.isfinite(param).all():
                raise TrainingDiverged(step, f"parameter {name}", float("nan"), logs, self.last_checkpoint)
        rng_ranks = dist_rt.gather_objects(capture_rng_state())  # every rank takes part; rank 0 writes
        path = self.ckpt_dir / checkpoint_name(step)
        if self.ranks.is_main:
            path = save_checkpoint(self.ckpt_dir, step, self.state(rng_ranks), self.cfg.keep_checkpoints)
        dist_rt.barrier()  # no rank runs ahead of a checkpoint it might have to resume from
        self.last_checkpoint = path


class _NoMetrics:
    """The metrics file of a rank other than 0: rank 0 alone writes train.tsv."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def start(self, resume_step: int | None = None) -> None:
        return None

    def write(self, row: dict[str, Any]) -> None:
        return None

    def read_rows(self) -> list[dict[str, str]]:
        return []

    def close(self) -> None:
        return None


def train(
    model: nn.Module,
    data: BatchSource,
    compute_loss: ComputeLoss,
    cfg: TrainConfig,
    out_dir: str | os.PathLike,
    resume: bool = False,
    tracker: Tracker | None = None,
    distributed: DistributedConfig | None = None,
) -> TrainResult:
    """Train `model` for `cfg.max_steps` optimizer steps; see the module docstring.

    compute_loss(model, batch, step) gets `step` 1-based (the optimizer step in progress) and
    returns a scalar loss (a mean over the batch, so accumulation matches a larger batch) and a
    dict of floats to log (e.g. loss terms, active_terms_q / active_terms_d).
    Outputs under out_dir: checkpoints/step-*.pt, metrics/train.tsv, metrics/train_summary.json.
    With resume=True the run continues from the latest checkpoint there (bit-exact on CPU); with
    none present it starts fresh. With resume=False earlier checkpoints and metrics are replaced.
    The tracker (log(step, values)) is the caller's: this function never finishes it.
    Raises TrainingDiverged on a NaN/inf loss or gradient norm; no checkpoint of that step is written.
    Under torchrun (several ranks) the run is data-parallel (module doc; `distributed` gives the
    backend, timeout and DDP options) and `data` must offer `shard(rank, world)`.
    """
    out = Path(out_dir)
    dcfg = distributed or DistributedConfig()
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    plan = plan_device(cfg.device, cfg.amp)
    ranks = dist_rt.init_from_env(plan.device.type, dcfg.backend, dcfg.timeout_seconds)
    if ranks.distributed and plan.device.type == "cuda":
        plan = DevicePlan(torch.device("cuda", ranks.local_rank), plan.autocast_dtype)
    model.to(plan.device)
    forward_model = model
    if ranks.distributed:
        if not hasattr(data, "shard"):
            raise TypeError(f"{type(data).__name__} cannot shard its batches over {ranks.world} processes")
        data.shard(ranks.rank, ranks.world)
        forward_model = DistributedDataParallel(
            model,
            device_ids=[ranks.local_rank] if plan.device.type == "cuda" else None,
            find_unused_parameters=dcfg.find_unused_parameters,
        )
    optimizer = build_optimizer(model, cfg)
    session = _Session(
        model=model,
        data=data,
        cfg=cfg,
        plan=plan,
        optimizer=optimizer,
        scheduler=warmup_linear_schedule(optimizer, cfg.warmup_steps, cfg.max_steps),
        window=LogWindow(),
        ckpt_dir=out / CHECKPOINTS,
        ranks=ranks,
        forward_model=forward_model,
    )
    metrics = MetricsTsv(out / METRICS_TSV) if ranks.is_main else _NoMetrics(out / METRICS_TSV)
    # rank r seeds seed + r: independent dropout masks per rank (data order has its own seeded generator)
    seed_everything(cfg.seed + ranks.rank, cfg.deterministic)
    start_step = _restore(session, metrics) if resume else None
    if start_step is None:
        _fresh_start(session, metrics)
        start_step = 0
    log.info(
        "training on %s x %d process(es): steps %d..%d, batch %d x %d accumulation, lr %g",
        plan.describe(), ranks.world, start_step + 1, cfg.max_steps, cfg.batch_size, cfg.grad_accum, cfg.lr,
    )
    started = time.perf_counter()
    session.step = start_step
    status = "failed"
    try:
        _run_steps(session, compute_loss, metrics, tracker, start_step)
        status = "completed"
        elapsed = time.perf_counter() - started
        log.info(
            "training finished at step %d: %d steps in %.1f s (%.3g steps/s)",
            session.step, session.step - start_step, elapsed, (session.step - start_step) / max(elapsed, 1e-9),
        )
    except TrainingDiverged:
        status = "diverged"
        raise
    finally:
        metrics.close()
        elapsed = time.perf_counter() - started
        step = session.step
        rows = metrics.read_rows()
        last_row = {k: float(v) for k, v in rows[-1].items() if k != "step" and v != ""} if rows else {}
        summary = {
            "status": status,
            "step": step,
            "max_steps": cfg.max_steps,
            "resumed_from_step": start_step if start_step else None,
            "last_logs": last_row,
            "checkpoint": str(session.last_checkpoint) if session.last_checkpoint else None,
            "metrics": str(metrics.path),
            "device": plan.describe(),
            "processes": ranks.world,
            "wall_seconds": round(elapsed, 3),
            "steps_per_second": round((step - start_step) / elapsed, 4) if elapsed > 0 else None,
            "step_seconds": step_seconds(session.step_times),
            "config": dataclasses.asdict(cfg),
        }
        if ranks.is_main:
            atomic_write_json(out / SUMMARY_JSON, summary)
    return TrainResult(step, last_row, session.last_checkpoint, metrics.path, out / SUMMARY_JSON)


def _fresh_start(session: _Session, metrics: MetricsTsv) -> None:
    """Start from step 0: earlier checkpoints in this folder would be mistaken for this run's."""
    stale = list_checkpoints(session.ckpt_dir) if session.ranks.is_main else []
    if stale:
        log.warning("fresh start: removing %d old checkpoint(s) in %s", len(stale), session.ckpt_dir)
        for _, path in stale:
            path.unlink()
    metrics.start(None)
    dist_rt.barrier()  # nobody looks for checkpoints while rank 0 clears them


def _restore(session: _Session, metrics: MetricsTsv) -> int | None:
    """Load the latest checkpoint into the session; return its step (None: nothing to resume)."""
    path = latest_checkpoint(session.ckpt_dir)
    if path is None:
        log.info("resume requested but %s holds no checkpoint: starting fresh", session.ckpt_dir)
        return None
    # RNG states must stay CPU tensors; the optimizer casts its state to the params' device.
    state = load_checkpoint(path, map_location="cpu")
    changed = {
        key: (old, getattr(session.cfg, key))
        for key, old in state["config"].items()
        if key not in _RESUME_NEUTRAL and hasattr(session.cfg, key) and getattr(session.cfg, key) != old
    }
    if changed:
        log.warning("resuming %s with changed settings (old, new): %s", path, changed)
    session.model.load_state_dict(state["model"])
    session.optimizer.load_state_dict(state["optimizer"])
    session.scheduler.load_state_dict(state["scheduler"])
    session.data.load_state_dict(state["data"])
    session.window.load_state_dict(state["log_window"])
    rng_ranks = state.get("rng_ranks") or [state["rng"]]
    if len(rng_ranks) != session.ranks.world:
        log.warning("checkpoint %s was written by %d process(es), this run has %d: every rank restores "
                    "rank 0's RNG state", path, len(rng_ranks), session.ranks.world)
        rng_ranks = [rng_ranks[0]] * session.ranks.world
    restore_rng_state(rng_ranks[session.ranks.rank])
    session.last_checkpoint = path
    step = int(state["step"])
    metrics.start(step)
    log.info("resumed from %s (step %d)", path, step)
    return step


def _micro_step(
    session: _Session, compute_loss: ComputeLoss, step: int, sync: bool = True
) -> tuple[float, dict[str, float]]:
    """Forward + backward of one micro-batch; the NaN guard runs before backward.

    sync False (a non-final accumulation micro-batch): DDP skips the gradient all-reduce.
    """
    batch = to_device(session.data.next_batch(), session.plan.device)
    model = session.forward_model if session.forward_model is not None else session.model
    no_sync = model.no_sync() if isinstance(model, DistributedDataParallel) and not sync else contextlib.nullcontext()
    with no_sync:
        with session.plan.autocast():
            loss, logs = compute_loss(model, batch, step)
        logs = {k: float(v) for k, v in logs.items()}
        reserved = sorted(set(logs) & set(FIRST_COLUMNS))
        if reserved:
            raise ValueError(f"compute_loss logs use reserved name(s) {reserved}; rename them")
        # one value on every rank: the NaN guard then stops all ranks at the same step
        merged = dist_rt.mean_over_ranks({**logs, "\0loss": float(loss.detach().float())})
        value = merged.pop("\0loss")
        if not math.isfinite(value):
            raise TrainingDiverged(step, "loss", value, merged, session.last_checkpoint)
        (loss / session.cfg.grad_accum).backward()
    return value, merged


def _optimizer_step(session: _Session, step: int, logs: dict[str, float]) -> tuple[float, float]:
    """Clip, check the gradient norm, update; return (lr used, gradient norm before clipping)."""
    params = [p for p in session.model.parameters() if p.grad is not None]
    max_norm = session.cfg.max_grad_norm if session.cfg.max_grad_norm is not None else math.inf
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm)) if params else 0.0
    if not math.isfinite(grad_norm):
        raise TrainingDiverged(step, "gradient norm", grad_norm, logs, session.last_checkpoint)
    lr = float(session.scheduler.get_last_lr()[0])
    session.optimizer.step()
    session.scheduler.step()
    return lr, grad_norm


def _run_steps(
    session: _Session, compute_loss: ComputeLoss, metrics: MetricsTsv, tracker: Tracker | None, start_step: int
) -> None:
    cfg = session.cfg
    session.model.train()
    bar = tqdm(
        total=cfg.max_steps, initial=start_step, unit="step", desc="train",
        disable=not (cfg.progress and session.ranks.is_main), dynamic_ncols=True,
    )
    try:
        for step in range(start_step + 1, cfg.max_steps + 1):
            started = time.perf_counter()
            session.optimizer.zero_grad(set_to_none=True)
            loss_sum, term_sums = 0.0, LogWindow()
            for micro in range(cfg.grad_accum):
                loss, logs = _micro_step(session, compute_loss, step, sync=micro == cfg.grad_accum - 1)
                loss_sum += loss
                term_sums.add(logs)
            step_logs = {"loss": loss_sum / cfg.grad_accum, **term_sums.means()}
            lr, grad_norm = _optimizer_step(session, step, step_logs)
            session.step = step
            session.window.add({**step_logs, "grad_norm": grad_norm})
            bar.update(1)
            bar.set_postfix(loss=f"{step_logs['loss']:.4f}", lr=f"{lr:.2e}", refresh=False)
            if step % cfg.log_every == 0 or step == cfg.max_steps:
                _log_row(session, metrics, tracker, step, lr)
            if step % cfg.checkpoint_every == 0 or step == cfg.max_steps:
                session.checkpoint(step, step_logs)
            # the loss and gradient norm were read back as floats: the GPU has finished the step's
            # backward; its optimizer update is counted in the next step's time
            session.step_times.append(time.perf_counter() - started)
    finally:
        bar.close()


def step_seconds(times: list[float]) -> dict[str, float | int] | None:
    """The summary's per-step wall times: the first step (warm-up: kernels, allocator) apart from
    the median and max of the rest; None when no step ran."""
    if not times:
        return None
    rest = sorted(times[1:])
    out = {"step_seconds_first": round(times[0], 4), "steps_timed": len(times)}
    if rest:
        out["step_seconds_median"] = round(rest[len(rest) // 2], 4)
        out["step_seconds_max"] = round(rest[-1], 4)
    return out


def _log_row(session: _Session, metrics: MetricsTsv, tracker: Tracker | None, step: int, lr: float) -> None:
    means = session.window.means()
    row = {"step": step, "lr": lr, **means}
    metrics.write(row)
    if tracker is not None and session.ranks.is_main:
        tracker.log(step, {f"train/{k}": v for k, v in row.items() if k != "step"})
    # Loss terms and sparsity monitors (e.g. active_terms_q / active_terms_d) as the loss logs them.
    terms = " ".join(f"{k}={v:.4g}" for k, v in sorted(means.items()) if k not in FIRST_COLUMNS)
    log.info("step %d lr %.3g loss %.5g grad_norm %.3g %s", step, lr, means["loss"], means["grad_norm"], terms)
    session.window.reset()
