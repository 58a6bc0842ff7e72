"""Resumable, seed-determined batch sources.

The loop only needs `next_batch()`, `state_dict()` and `load_state_dict()`. `ShuffledBatches`
draws a fresh permutation of the examples per epoch from (seed, epoch) alone, so its whole
state is (epoch, position): a resumed run continues with exactly the next batch, and two
sources with the same seed and examples yield the same example order whatever their batch size.

Under data parallelism (`shard(rank, world)`) every rank draws the same global batch and keeps its
contiguous slice of it, so the W ranks together see exactly the one-process batch, in rank order,
and the shared (epoch, position) state resumes all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import torch

E = TypeVar("E")


class BatchSource(Protocol):
    """What `train` consumes: an endless stream of batches with a checkpointable position."""

    def next_batch(self) -> Any: ...

    def state_dict(self) -> dict[str, int]: ...

    def load_state_dict(self, state: dict[str, int]) -> None: ...


def default_collate(examples: list[Any]) -> list[Any]:
    """Keep the batch as the list of examples (the caller's compute_loss handles it)."""
    return examples


class ShuffledBatches:
    """Endless batches over `examples`, reshuffled each epoch by a generator seeded with seed+epoch."""

    def __init__(
        self,
        examples: Sequence[E],
        batch_size: int,
        collate: Callable[[list[E]], Any] = default_collate,
        seed: int = 0,
        drop_last: bool = True,
        shuffle: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if len(examples) == 0:
            raise ValueError("no training examples")
        if drop_last and len(examples) < batch_size:
            raise ValueError(
                f"{len(examples)} examples cannot fill one batch of {batch_size} with drop_last; "
                "lower batch_size or set drop_last false"
            )
        self.examples = examples
        self.batch_size = batch_size
        self.collate = collate
        self.seed = seed
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.epoch = 0
        self.position = 0  # examples of the current epoch already served
        self._order: list[int] | None = None
        self.rank, self.world = 0, 1

    def shard(self, rank: int, world: int) -> None:
        """Serve only this rank's slice of each global batch (batch_size must divide by world)."""
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"rank {rank} is not in a world of {world}")
        if self.batch_size % world:
            raise ValueError(
                f"batch_size {self.batch_size} (the global micro-batch) does not split over {world} processes; "
                "make it a multiple of the process count"
            )
        if not self.drop_last and len(self.examples) % self.batch_size:
            raise ValueError("sharded batches need drop_last true (every rank must get equal slices)")
        self.rank, self.world = rank, world

    def _epoch_order(self) -> list[int]:
        if self._order is None:
            if self.shuffle:
                gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
                self._order = torch.randperm(len(self.examples), generator=gen).tolist()
            else:
                self._order = list(range(len(self.examples)))
        return self._order

    def _next_epoch(self) -> None:
        self.epoch += 1
        self.position = 0
        self._order = None

    def next_batch(self) -> Any:
        """The next batch, collated; crosses to the next epoch (new permutation) as needed."""
        remaining = len(self.examples) - self.position
        if remaining <= 0 or (self.drop_last and remaining < self.batch_size):
            self._next_epoch()
        order = self._epoch_order()
        idx = order[self.position : self.position + self.batch_size]
        self.position += len(idx)
        per_rank = len(idx) // self.world
        idx = idx[self.rank * per_rank : (self.rank + 1) * per_rank]
        return self.collate([self.examples[i] for i in idx])

    def __iter__(self):
        while True:
            yield self.next_batch()

    def state_dict(self) -> dict[str, int]:
        """Where the stream stands: (epoch, position); the seed fixes everything else."""
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed, "size": len(self.examples)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Continue from a saved position; refuses a state of a different seed or example count."""
        if state.get("seed", self.seed) != self.seed or state.get("size", len(self.examples)) != len(self.examples):
            raise ValueError(
                f"batch source state is for seed={state.get('seed')} over {state.get('size')} examples, "
                f"this source has seed={self.seed} over {len(self.examples)}: the data changed since the checkpoint"
            )
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])
        self._order = None


def batches_for(examples: Sequence[E], collate: Callable[[list[E]], Any], cfg: Any) -> ShuffledBatches:
    """A ShuffledBatches sized and seeded by a TrainConfig (batch_size, seed, drop_last)."""
    return ShuffledBatches(examples, cfg.batch_size, collate, seed=cfg.seed, drop_last=cfg.drop_last)
