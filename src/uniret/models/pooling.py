"""Pooling of token states into one vector: [CLS], mean, and SPLADE's saturated max over the vocabulary."""

from __future__ import annotations

from collections.abc import Callable

import torch


def cls_pool(hidden: torch.Tensor) -> torch.Tensor:
    """[B, L, H] -> [B, H]: the first ([CLS]) position."""
    return hidden[:, 0]


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, L, H] -> [B, H]: mean over non-padding positions (special tokens included)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def saturated_max_pool(logits: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """SPLADE-max / UnifieR Eq. 5: v = max_i log(1 + relu(logits_i)) over non-padding positions.

    log(1 + relu(.)) is monotone non-decreasing, so it commutes with the max: we take the max of
    the raw logits first and saturate the [B, V] result, not the [B, L, V] tensor (same values and
    gradients, far fewer elementwise ops on a 30522-wide vocabulary).
    """
    masked = logits.masked_fill(~attention_mask.bool().unsqueeze(-1), float("-inf"))
    pooled = masked.max(dim=1).values
    return torch.log1p(torch.relu(pooled))


def exporting() -> bool:
    """True while torch traces the model (ONNX export, jit trace, torch.export/compile)."""
    return bool(torch.onnx.is_in_onnx_export() or torch.jit.is_tracing() or torch.compiler.is_compiling())


def vocab_max(
    project: Callable[[torch.Tensor], torch.Tensor], hidden: torch.Tensor, keep: torch.Tensor
) -> torch.Tensor:
    """max over kept tokens of project(h_i) ([B, L, H] -> [B, V]); 0 for a row with no kept token.

    Eagerly, each row projects only its kept tokens: the 30522-wide vocabulary projection is the
    dominant cost, so skipping padding (and never materialising the padded [B, L, V] tensor) is
    a large saving. While exporting/tracing, a loop over the batch would be baked in with the
    sample's batch size, so the vectorised masked form runs instead (same values).
    """
    keep = keep.bool()
    if exporting():
        logits = project(hidden).masked_fill(~keep.unsqueeze(-1), float("-inf"))
        pooled = logits.max(dim=1).values
        return torch.where(keep.any(dim=1, keepdim=True), pooled, torch.zeros_like(pooled))
    rows = []
    for b in range(hidden.shape[0]):
        kept = hidden[b][keep[b]]
        if kept.shape[0] == 0:
            rows.append(None)
            continue
        rows.append(project(kept).max(dim=0).values)
    width = next((r.shape[0] for r in rows if r is not None), None)
    if width is None:  # no row kept anything: width from one projected (dummy) token
        width = project(hidden[:1, :1]).shape[-1]
    return torch.stack([r if r is not None else hidden.new_zeros(width) for r in rows])


def splade_pool(project: Callable[[torch.Tensor], torch.Tensor], hidden: torch.Tensor, mask: torch.Tensor):
    """SPLADE-max / UnifieR Eq. 5 from hidden states: log(1 + relu(max_i project(h_i)))."""
    return torch.log1p(torch.relu(vocab_max(project, hidden, mask)))
