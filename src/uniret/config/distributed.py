"""The `distributed` section: how many processes the training stages and corpus encoding use.

Training: a stage in `stages` runs under torchrun (DistributedDataParallel) when it asks for more
than one process in all (nproc_per_node x nnodes, or one process per visible GPU with `per_gpu`).
Each stage's `train.batch_size` stays the GLOBAL micro-batch: the W processes take batch_size / W
examples each, and the contrastive losses gather every rank's encodings, so the recipe (its
effective batch and in-batch negatives) does not change with the process count.

Encoding: `encode_shards` splits a corpus pass (index; the mine and evaluate corpus passes)
into that many shards encoded by parallel worker processes and merged in corpus order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

TRAINING_STAGES = ("warmup", "reranker", "continual", "distill")


@dataclass
class DistributedConfig:
    """Process counts and the torchrun rendezvous of multi-process training and encoding."""

    nproc_per_node: int = 1  # processes per machine (torchrun --nproc_per_node)
    per_gpu: bool = False  # true: one process per visible CUDA device instead (CPU-only machine: nproc_per_node)
    nnodes: int = 1  # machines (torchrun --nnodes); > 1 needs a rendezvous endpoint (PyTorchJob sets it)
    backend: Literal["auto", "gloo", "nccl"] = "auto"  # auto: nccl on CUDA, gloo on CPU
    rdzv_endpoint: str = ""  # host:port of the c10d rendezvous for nnodes > 1; "" on one machine (standalone)
    # DDP: parameters no loss reaches (e.g. the unused BERT pooler of the MiniLM encoders and the
    # cross-encoder) would stall the gradient reduction without it; false saves a graph walk per forward
    find_unused_parameters: bool = True
    timeout_seconds: int = 1800  # collective timeout (a rank stuck this long fails the run)
    stages: list[str] = field(default_factory=lambda: list(TRAINING_STAGES))
    encode_shards: int = 1  # corpus-encoding shards encoded by parallel processes, then merged
    encode_threads: int | None = None  # torch/onnx threads per encoding shard; None: cores / shards

    def validate(self) -> None:
        for name in ("nproc_per_node", "nnodes", "timeout_seconds", "encode_shards"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.encode_threads is not None and self.encode_threads < 1:
            raise ValueError(f"encode_threads must be >= 1 or null, got {self.encode_threads}")
        unknown = sorted(set(self.stages) - set(TRAINING_STAGES))
        if unknown:
            raise ValueError(f"stages: {unknown} are not training stages; allowed: {list(TRAINING_STAGES)}")
        if self.nnodes > 1 and not self.rdzv_endpoint:
            raise ValueError("nnodes > 1 needs rdzv_endpoint (host:port of the rendezvous)")

    def processes_per_node(self) -> int:
        """nproc_per_node, or the visible CUDA devices with per_gpu (when there are any)."""
        if self.per_gpu:
            import torch

            if torch.cuda.is_available():
                return torch.cuda.device_count()
        return self.nproc_per_node

    def world_size(self) -> int:
        """Processes in all (every node runs the same count)."""
        return self.processes_per_node() * self.nnodes
