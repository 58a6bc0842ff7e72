"""TrainConfig: the settings of the generic training loop (uniret.training.train).

Stage sections (warmup, continual, distill, reranker) each hold a `train:` sub-mapping that the
loader builds into this dataclass, e.g.

    @dataclass
    class WarmupConfig:
        train: TrainConfig = field(default_factory=TrainConfig)

so `warmup: {train: {lr: 2.0e-5, max_steps: 20}}` in params.yaml, with per-profile overrides,
yields a validated TrainConfig. The defaults below are only fallbacks; params.yaml sets the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Mixed precision (training.device.autocast_dtype): "auto": bf16 autocast on CUDA, none on CPU;
# "native": bf16 on CUDA and on CPUs with native bf16 arithmetic (AVX512-BF16/AMX), else none;
# "bf16": autocast everywhere; "off": never.
Amp = Literal["auto", "native", "bf16", "off"]


@dataclass(kw_only=True)
class TrainConfig:
    """Optimisation, schedule, checkpointing and logging of one training run.

    lr, max_steps, batch_size, warmup_steps, checkpoint_every and seed differ per stage: they have
    no default here, params.yaml `training.<stage>.train` gives them.
    """

    lr: float
    weight_decay: float = 0.01
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    max_steps: int  # optimizer steps (each = grad_accum micro-batches)
    batch_size: int  # micro-batch size; effective batch = batch_size * grad_accum
    grad_accum: int = 1
    warmup_steps: int  # linear warmup, then linear decay to 0 after max_steps
    max_grad_norm: float | None = 1.0  # None: no clipping (the norm is still logged)
    checkpoint_every: int  # steps; a checkpoint is also written at the end
    keep_checkpoints: int = 2  # the last K checkpoints are kept
    log_every: int = 10  # steps per metrics row (values are averaged over the window)
    seed: int
    amp: Amp = "auto"  # see Amp
    device: Literal["auto", "cpu", "cuda"] = "auto"
    num_threads: int | None = None  # torch intra-op threads; None leaves torch's default
    deterministic: bool = True  # deterministic kernels (bit-exact resume on CPU)
    drop_last: bool = True  # drop an epoch's incomplete last batch (constant batch shapes)
    progress: bool = True  # tqdm progress bar

    def validate(self) -> None:
        """Raise ValueError naming the first inconsistent field (the loader adds the key path)."""
        positive_ints = ("max_steps", "batch_size", "grad_accum", "checkpoint_every", "keep_checkpoints", "log_every")
        for name in positive_ints:
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        for name in ("adam_beta1", "adam_beta2"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), got {value}")
        if self.adam_eps <= 0:
            raise ValueError(f"adam_eps must be > 0, got {self.adam_eps}")
        if not 0 <= self.warmup_steps <= self.max_steps:
            raise ValueError(f"warmup_steps must be in [0, max_steps={self.max_steps}], got {self.warmup_steps}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be > 0 or null, got {self.max_grad_norm}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"num_threads must be >= 1 or null, got {self.num_threads}")
