"""Export the query and document encoders to ONNX (uniret.retrieval.onnx_encoder runs them).

The graphs output what retrieval needs, already pooled: `dense` [batch, dim], `sparse`
[batch, vocab] (the pooled term weights, not per-token vocabulary logits: STACK.md, the
30522-wide MLM output dominates CPU time) and, for query encoders with a gate, `gate` [batch].
Batch and sequence axes are dynamic.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

import onnx
import torch
from torch import nn

from uniret.config.retrieval import ExportConfig
from uniret.models.backbones import eager_attention
from uniret.models.pooling import quantizable_vocab_projection
from uniret.retrieval.onnx_encoder import DOC_FILE, INPUTS, QUERY_FILE

log = logging.getLogger("uniret.export")

OUTPUTS = ("dense", "sparse", "gate")
# Sample texts for tracing: two of different lengths, so no axis is specialised to 1.
TRACE_TEXTS = ("what causes protein misfolding in cells", "ONNX export trace sample")


class EncoderGraph(nn.Module):
    """A RetrievalEncoder fixed to one side (query or document), returning a tuple of tensors."""

    def __init__(self, model: nn.Module, is_query: bool, outputs: Sequence[str]):
        super().__init__()
        self.model = model
        self.is_query = is_query
        self.outputs = tuple(outputs)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        enc = self.model(input_ids, attention_mask, is_query=self.is_query)
        parts = {"dense": enc.dense, "sparse": enc.sparse, "gate": enc.gate.reshape(-1) if enc.gate is not None else None}
        return tuple(parts[name].float() for name in self.outputs)


def _sample_inputs(tokenizer, max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    enc = tokenizer(list(TRACE_TEXTS), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


@torch.inference_mode()
def produced_outputs(model: nn.Module, tokenizer, is_query: bool, max_length: int) -> list[str]:
    """Which of dense/sparse/gate the model returns for this side."""
    ids, mask = _sample_inputs(tokenizer, max_length)
    enc = model(ids, mask, is_query=is_query)
    return [name for name in OUTPUTS if getattr(enc, name) is not None]


def export_encoder(
    model: nn.Module, tokenizer, path: str | Path, is_query: bool, cfg: ExportConfig, max_length: int
) -> list[str]:
    """Export one side of `model` to a single-file ONNX graph at `path`; return its output names.

    The model is put in eval mode on the CPU (in place): export traces on the CPU.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model = model.eval().cpu()
    outputs = produced_outputs(model, tokenizer, is_query, max_length)
    graph = EncoderGraph(model, is_query, outputs).eval()
    log.info("exporting %s encoder -> %s (outputs %s, dynamo=%s)", "query" if is_query else "doc", path, outputs, cfg.dynamo)
    with contextlib.ExitStack() as form:
        # the graph's form, not its function: eager attention (no per-layer Where/IsNaN over the
        # softmax) and a vocabulary GEMM the int8 quantiser reaches; same outputs (parity checks)
        form.enter_context(eager_attention(model))
        form.enter_context(quantizable_vocab_projection(model))
        _export(graph, tokenizer, path, outputs, cfg, max_length)
    onnx.checker.check_model(str(path))
    return outputs


def _export(graph: EncoderGraph, tokenizer, path: Path, outputs: list[str], cfg: ExportConfig, max_length: int) -> None:
    if cfg.dynamo:
        batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
        dynamic = {"dynamic_shapes": {name: {0: batch, 1: seq} for name in INPUTS}}
    else:  # the legacy (TorchScript) exporter names dynamic axes per input and output
        axes = {name: {0: "batch", 1: "seq"} for name in INPUTS}
        dynamic = {"dynamic_axes": {**axes, **{name: {0: "batch"} for name in outputs}}}
    torch.onnx.export(
        graph,
        _sample_inputs(tokenizer, max_length),
        str(path),
        input_names=list(INPUTS),
        output_names=outputs,
        opset_version=cfg.opset,
        dynamo=cfg.dynamo,
        external_data=False,  # one self-contained file per encoder (models here are far below 2 GB)
        **dynamic,
    )


def export_encoders(model: nn.Module, tokenizer, out_dir: str | Path, cfg: ExportConfig, query_max_length: int,
                    doc_max_length: int) -> dict[str, list[str]]:
    """Export query.onnx and doc.onnx into `out_dir`; return {file: output names}."""
    out_dir = Path(out_dir)
    return {
        QUERY_FILE: export_encoder(model, tokenizer, out_dir / QUERY_FILE, True, cfg, query_max_length),
        DOC_FILE: export_encoder(model, tokenizer, out_dir / DOC_FILE, False, cfg, doc_max_length),
    }
