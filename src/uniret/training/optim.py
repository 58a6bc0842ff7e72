"""The optimizer: AdamW with weight decay on matrices only."""

from __future__ import annotations

import torch
from torch import nn

from uniret.config.training import TrainConfig


def build_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW over the trainable parameters; biases and norm weights (1-d tensors) get no decay.

    Decaying biases and LayerNorm gains only pulls them toward 0 without regularising anything,
    which is why BERT-style recipes exempt them.
    """
    decay, no_decay = [], []
    for param in model.parameters():
        if param.requires_grad:
            (decay if param.ndim >= 2 else no_decay).append(param)
    if not decay and not no_decay:
        raise ValueError("the model has no trainable parameters")
    groups = [
        {"params": group, "weight_decay": wd}
        for group, wd in ((decay, cfg.weight_decay), (no_decay, 0.0))
        if group
    ]
    return torch.optim.AdamW(
        groups, lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps
    )
