"""Pooling of token states into one vector: [CLS], mean, and SPLADE's saturated max over the vocabulary."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import torch
from torch import nn


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


# Upper bound on the elements of one intermediate logits block in the eager vocab_max: a chunk of
# vocabulary columns (linear heads) or of documents (other heads) is sized to stay below it, so the
# padded [B, L, V] tensor (about 1 GB for 32 x 256 tokens) is never materialised.
BLOCK_ELEMENTS = 1 << 24

_REFERENCE = {"on": False}


@contextmanager
def reference_vocab_max():
    """Run vocab_max with the original per-row loop (benchmarks and parity tests compare against it)."""
    before = _REFERENCE["on"]
    _REFERENCE["on"] = True
    try:
        yield
    finally:
        _REFERENCE["on"] = before


def vocab_max(
    project: Callable[[torch.Tensor], torch.Tensor], hidden: torch.Tensor, keep: torch.Tensor
) -> torch.Tensor:
    """max over kept tokens of project(h_i) ([B, L, H] -> [B, V]); 0 for a row with no kept token.

    `project` must act on each token independently (an MLM head, or a per-token function of it).
    Eagerly, padding positions are overwritten with a kept token of the same row (a duplicate
    never changes a max), so no [B, L, V] mask is needed; the projection then runs in blocks of
    BLOCK_ELEMENTS. For a BERT MLM head (transform + linear decoder) the blocks are vocabulary
    slices of ONE GEMM over all B*L positions, and the decoder bias is added after the max
    (a per-column constant commutes with it). Reductions use max(dim) (saves only indices for
    backward), so training memory stays O(B*V), not O(B*L*V). While exporting/tracing, a linear
    head runs as one un-sliced GEMM (no shape-dependent Python loops) and any other head as the
    vectorised masked form (same values either way).
    """
    keep = keep.bool()
    head = _linear_head(project)
    if exporting() and head is None:
        logits = project(hidden).masked_fill(~keep.unsqueeze(-1), float("-inf"))
        pooled = logits.max(dim=1).values
        return torch.where(keep.any(dim=1, keepdim=True), pooled, torch.zeros_like(pooled))
    if _REFERENCE["on"] and not exporting():  # a Python loop must never be traced
        return vocab_max_loop(project, hidden, keep)
    if head is not None:
        transform, decoder = head
        pooled = linear_max(decoder, fill_padding(transform(hidden), keep))
    else:
        pooled = _blockwise_max(project, fill_padding(hidden, keep))
    return torch.where(keep.any(dim=1, keepdim=True), pooled, torch.zeros_like(pooled))


# Name of the [H, V] copy of a linear MLM decoder's weight that quantizable_vocab_projection attaches
# (a non-persistent buffer) while exporting: the traced GEMM then reads states @ W^T from a constant
# in the second operand, the form ONNX Runtime's dynamic quantiser turns into an int8 MatMul.
EXPORT_WEIGHT_T = "_export_weight_t"


@contextmanager
def quantizable_vocab_projection(model: nn.Module):
    """While active, exported graphs compute each linear MLM head's vocabulary logits as
    states @ W^T with W^T a constant (a non-persistent buffer, dropped afterwards).

    The eager form multiplies W @ states^T (vocabulary slices first, the layout the max over tokens
    reads fastest), but a graph with the weight as the FIRST operand is left in fp32 by ONNX
    Runtime's dynamic quantiser, and that 30,522-wide GEMM was a third of the int8 document graph's
    time (E21). The checkpoint is untouched (no state_dict entry)."""
    decoders = [head[1] for head in map(_linear_head, model.modules()) if head is not None]
    added = []
    for decoder in decoders:
        if getattr(decoder, EXPORT_WEIGHT_T, None) is None:
            decoder.register_buffer(EXPORT_WEIGHT_T, decoder.weight.detach().t().contiguous(), persistent=False)
            added.append(decoder)
    try:
        yield
    finally:
        for decoder in added:
            del decoder._buffers[EXPORT_WEIGHT_T]


def _linear_head(project) -> tuple[Callable[[torch.Tensor], torch.Tensor], nn.Linear] | None:
    """(transform, decoder) of a BERT-style MLM head (`.predictions.transform/.decoder`), else None."""
    predictions = getattr(project, "predictions", None)
    transform = getattr(predictions, "transform", None)
    decoder = getattr(predictions, "decoder", None)
    if transform is None or not isinstance(decoder, nn.Linear):
        return None
    return transform, decoder


def fill_padding(states: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """[B, L, H] with every non-kept position replaced by the row's first kept position."""
    first = keep.to(torch.uint8).argmax(dim=1)  # 0 for a row without kept tokens (zeroed later)
    source = states[torch.arange(states.shape[0], device=states.device), first].unsqueeze(1)
    return torch.where(keep.unsqueeze(-1), states, source)


def linear_max(decoder: nn.Linear, states: torch.Tensor, with_indices: bool = False):
    """max_l (W s_l + b) for [B, L, H] states -> [B, V], one vocabulary slice per GEMM; with
    `with_indices`, also the [B, V] token position of each max."""
    weight_t = getattr(decoder, EXPORT_WEIGHT_T, None)
    if weight_t is not None and exporting() and not with_indices:
        pooled = torch.matmul(states, weight_t).max(dim=1).values  # [B, L, V] -> [B, V]
        return pooled + decoder.bias if decoder.bias is not None else pooled
    batch, length = states.shape[:2]
    flat_t = states.flatten(0, 1).t()
    weight = decoder.weight
    # Traced graphs get ONE GEMM: a step from the symbolic B, L would specialise them, and the
    # legacy exporter constant-folds weight slices to wrong sizes (off by one row per slice).
    step = weight.shape[0] if exporting() else max(1, BLOCK_ELEMENTS // max(1, batch * length))
    # [slice, B*L] blocks: the max over L then runs along contiguous memory
    slices = [weight[start : start + step] for start in range(0, weight.shape[0], step)]
    parts = [(w @ flat_t).view(w.shape[0], batch, length).max(dim=-1) for w in slices]
    pooled = torch.cat([part.values for part in parts])  # [V, B]
    if decoder.bias is not None:
        pooled = pooled + decoder.bias.unsqueeze(1)
    if with_indices:
        return pooled.t().contiguous(), torch.cat([part.indices for part in parts]).t().contiguous()
    return pooled.t().contiguous()


def _active_entries_pool(transform, decoder: nn.Linear, hidden: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """splade_pool of a linear MLM head for training: the same values, and the same gradients at a
    fraction of the cost.

    The gradient of max_l(W s_l + b) reaches only the arg-max token of each vocabulary entry, and
    log(1 + relu(.)) passes none through an entry whose max is <= 0. So the full [B*L, V] logits
    GEMM runs without autograd (no backward GEMMs, no saved blocks) to find each entry's value and
    arg-max token, and only the active entries (a few hundred per text, of 30,522) are recomputed
    as differentiable dot products W_v . s_argmax + b_v. Measured on the pair model's lexicon at
    its training shape (8 queries, 32 documents x 128 tokens, 2 cores): 884 -> 454 ms per forward +
    backward (E19).
    """
    states = fill_padding(transform(hidden), keep)
    with torch.no_grad():
        pooled, arg = linear_max(decoder, states.detach(), with_indices=True)
        pooled = pooled.masked_fill(~keep.any(dim=1, keepdim=True), 0.0)  # a row with no kept token: empty
        rows, cols = (pooled > 0).nonzero(as_tuple=True)
        tokens = arg[rows, cols]
    logits = (states[rows, tokens] * decoder.weight[cols]).sum(-1)
    if decoder.bias is not None:
        logits = logits + decoder.bias[cols]
    values = torch.log1p(torch.relu(logits))
    return values.new_zeros(pooled.shape).index_put((rows, cols), values)


def _blockwise_max(project: Callable[[torch.Tensor], torch.Tensor], states: torch.Tensor) -> torch.Tensor:
    """max_l project(s_l) for [B, L, H] states, a few documents per projection."""
    batch, length = states.shape[:2]
    first = project(states[:1]).max(dim=1).values
    step = max(1, BLOCK_ELEMENTS // max(1, length * first.shape[-1]))
    rest = [project(states[start : start + step]).max(dim=1).values for start in range(1, batch, step)]
    return torch.cat([first, *rest])


def vocab_max_loop(
    project: Callable[[torch.Tensor], torch.Tensor], hidden: torch.Tensor, keep: torch.Tensor
) -> torch.Tensor:
    """Reference form of vocab_max: each row projects only its kept tokens, one row at a time."""
    keep = keep.bool()
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
    """SPLADE-max / UnifieR Eq. 5 from hidden states: log(1 + relu(max_i project(h_i))).

    While autograd records (training) a BERT-style linear head takes the active-entries path,
    which gives the same values and gradients without the backward pass through the full
    token x vocabulary GEMM (_active_entries_pool)."""
    head = _linear_head(project)
    if head is not None and torch.is_grad_enabled() and not exporting() and not _REFERENCE["on"]:
        return _active_entries_pool(*head, hidden, mask.bool())
    return torch.log1p(torch.relu(vocab_max(project, hidden, mask)))
