"""Data-parallel training under torchrun: process group, rank roles and cross-rank gathers.

torchrun starts W copies of the same stage command with RANK / WORLD_SIZE / LOCAL_RANK /
MASTER_ADDR / MASTER_PORT in the environment; `init_from_env` joins them into one process group
(gloo on CPU, NCCL on CUDA). Outside torchrun everything here degrades to one process (rank 0
of 1), so the single-process path runs the very same code.

In-batch negatives across ranks: every rank gathers all ranks' encodings with `gather_with_grad`
and computes the loss of the GLOBAL batch (the value a one-process run computes). Its backward
sums the incoming gradients over ranks (all_reduce) and keeps this rank's slice, so each rank's
parameter gradient is W x the global gradient through its own rows; DDP's averaging over the W
ranks then yields exactly the one-process gradient. (Tevatron and open_clip's gather variants do
the same job; this one keeps the loss value global, so logs need no rescaling.)
"""

from __future__ import annotations

import datetime
import logging
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

log = logging.getLogger("uniret.training")

ENV_RANK, ENV_WORLD, ENV_LOCAL = "RANK", "WORLD_SIZE", "LOCAL_RANK"


@dataclass(frozen=True)
class Ranks:
    """This process's place in the job."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: the one process that writes checkpoints, metrics and manifests."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1


def launched_by_torchrun() -> bool:
    """True inside a process torchrun (or a PyTorchJob pod) started as one of several ranks."""
    return int(os.environ.get(ENV_WORLD, "1")) > 1 and ENV_RANK in os.environ


def current() -> Ranks:
    """Ranks of the initialised process group, else of the environment, else a single process."""
    if dist.is_available() and dist.is_initialized():
        return Ranks(dist.get_rank(), dist.get_world_size(), int(os.environ.get(ENV_LOCAL, "0")))
    if launched_by_torchrun():
        return Ranks(int(os.environ[ENV_RANK]), int(os.environ[ENV_WORLD]), int(os.environ.get(ENV_LOCAL, "0")))
    return Ranks()


def init_from_env(device_type: str, backend: str = "auto", timeout_seconds: int = 1800) -> Ranks:
    """Join torchrun's process group once (a no-op for a single process or when already joined)."""
    if not launched_by_torchrun() or dist.is_initialized():
        return current()
    chosen = backend if backend != "auto" else ("nccl" if device_type == "cuda" else "gloo")
    if device_type == "cuda":
        torch.cuda.set_device(int(os.environ.get(ENV_LOCAL, "0")))
    dist.init_process_group(chosen, timeout=datetime.timedelta(seconds=timeout_seconds))
    ranks = current()
    log.info("joined process group: rank %d of %d (%s)", ranks.rank, ranks.world, chosen)
    return ranks


def barrier() -> None:
    """Wait for every rank (no-op without a process group)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


class _GatherWithGrad(torch.autograd.Function):
    """all_gather along dim 0 whose backward all-reduces the gradient and keeps this rank's rows."""

    @staticmethod
    def forward(ctx, tensor: torch.Tensor) -> torch.Tensor:
        world = dist.get_world_size()
        ctx.rank, ctx.rows = dist.get_rank(), tensor.shape[0]
        parts = [torch.empty_like(tensor) for _ in range(world)]
        dist.all_gather(parts, tensor.contiguous())
        return torch.cat(parts, dim=0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        return grad[ctx.rank * ctx.rows : (ctx.rank + 1) * ctx.rows]


def gather_with_grad(tensor: torch.Tensor | None) -> torch.Tensor | None:
    """All ranks' rows of `tensor` in rank order, differentiable (see module doc); unchanged alone.

    Every rank must pass the same number of rows (the batch source gives equal shards).
    """
    if tensor is None or not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor
    return _GatherWithGrad.apply(tensor)


def gather_detached(tensor: torch.Tensor | None) -> torch.Tensor | None:
    """All ranks' rows of a tensor that needs no gradient (teacher scores, BM25 scores)."""
    if tensor is None or not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor.detach().contiguous())
    return torch.cat(parts, dim=0)


def mean_over_ranks(values: dict[str, float]) -> dict[str, float]:
    """Each logged value averaged over ranks (every rank must log the same keys)."""
    if not values or not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return values
    keys = sorted(values)
    # float64 on the CPU: gloo and NCCL both reduce it, and the log keeps full precision
    packed = torch.tensor([values[k] for k in keys], dtype=torch.float64)
    if dist.get_backend() == "nccl":
        packed = packed.cuda()
    dist.all_reduce(packed, op=dist.ReduceOp.SUM)
    packed = (packed / dist.get_world_size()).cpu()
    return {k: float(v) for k, v in zip(keys, packed.tolist(), strict=True)}


def gather_objects(obj) -> list:
    """Every rank's picklable `obj`, in rank order ([obj] alone)."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [obj]
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out
