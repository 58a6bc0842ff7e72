"""A torchrun worker for test_distributed_loop: the training loop on a small MLP with dropout, an
unused parameter and two forward passes per step (the shape of the bi-encoder stages under DDP).

python -m torch.distributed.run --nproc_per_node 2 tests/training/ddp_worker.py OUT MAX_STEPS RESUME CRASH_AT
Every rank trains; rank 0 writes OUT/checkpoints, OUT/metrics and OUT/final.pt (the weights).
CRASH_AT > 0 raises at that step on every rank (a simulated failure after a checkpoint).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

from uniret.config.training import TrainConfig
from uniret.training import train
from uniret.training.batches import ShuffledBatches
from uniret.training.distributed import current

N_EXAMPLES, N_FEATURES = 48, 4


def _data():
    gen = torch.Generator().manual_seed(123)
    x = torch.randn(N_EXAMPLES, N_FEATURES, generator=gen)
    y = x @ torch.tensor([1.0, -2.0, 3.0, 0.5]) + 0.5
    return list(zip(x, y, strict=True))


def _collate(batch):
    return {"x": torch.stack([e[0] for e in batch]), "y": torch.stack([e[1] for e in batch])}


class TwoPass(nn.Module):
    """An MLP with dropout plus a parameter no loss uses (like BERT's pooler in the MiniLM encoders)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(N_FEATURES, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
        self.pooler = nn.Linear(N_FEATURES, N_FEATURES)  # never called

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def main() -> int:
    out, max_steps, resume, crash_at = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
    torch.manual_seed(0)
    model = TwoPass()
    cfg = TrainConfig(lr=1e-2, max_steps=max_steps, batch_size=8, warmup_steps=0, checkpoint_every=2,
                      keep_checkpoints=5, log_every=1, seed=7, progress=False, num_threads=1)

    def loss(m, batch, step):
        if step == crash_at:
            raise RuntimeError("simulated crash")
        # two forward passes before one backward, as a bi-encoder's query and document passes
        value = ((m(batch["x"]).squeeze(-1) - batch["y"]) ** 2).mean() + 0.1 * (m(0.5 * batch["x"]) ** 2).mean()
        return value, {"mse": float(value.detach())}

    train(model, ShuffledBatches(_data(), cfg.batch_size, _collate, seed=cfg.seed), loss, cfg, out, resume=resume)
    if current().is_main:
        torch.save(model.state_dict(), out / "final.pt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
