"""A tiny, fixed regression problem for the training-loop tests."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import nn

N_EXAMPLES = 40
N_FEATURES = 4


def _collate(batch):
    return {"x": torch.stack([e[0] for e in batch]), "y": torch.stack([e[1] for e in batch])}


@pytest.fixture
def regression_data():
    """(examples, collate): y = x @ w + 0.5 with a fixed w, 40 examples."""
    gen = torch.Generator().manual_seed(123)
    x = torch.randn(N_EXAMPLES, N_FEATURES, generator=gen)
    w = torch.tensor([1.0, -2.0, 3.0, 0.5])
    y = x @ w + 0.5
    return list(zip(x, y, strict=True)), _collate


@pytest.fixture
def make_linear():
    """Factory of nn.Linear(4, 1) models whose init depends only on `seed`."""

    def make(seed: int = 0) -> nn.Module:
        torch.manual_seed(seed)
        return nn.Linear(N_FEATURES, 1)

    return make


@pytest.fixture
def make_dropout_mlp():
    """Factory of a small MLP with dropout (its training uses the torch RNG)."""

    def make(seed: int = 0) -> nn.Module:
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(N_FEATURES, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 1))

    return make


def mse(model, batch, step):
    """Mean squared error, with the logs a retrieval loss would return."""
    pred = model(batch["x"]).squeeze(-1)
    loss = ((pred - batch["y"]) ** 2).mean()
    return loss, {"mse": loss.item(), "step_echo": float(step)}


def noisy_mse(model, batch, step):
    """MSE perturbed by python, numpy and torch randomness: exact resume needs all three RNGs."""
    pred = model(batch["x"]).squeeze(-1) + 0.01 * torch.randn(len(batch["y"]))
    scale = 1.0 + 0.01 * random.random() + 0.01 * float(np.random.rand())
    loss = scale * ((pred - batch["y"]) ** 2).mean()
    return loss, {"mse": loss.item(), "active_terms_q": float((pred > 0).sum()), "active_terms_d": scale}


@pytest.fixture
def losses():
    """The loss functions above, by name."""
    return {"mse": mse, "noisy_mse": noisy_mse}
