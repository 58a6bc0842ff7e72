"""Export the query and document encoders to ONNX, and run them with onnxruntime.

The graphs output what retrieval needs, already pooled: `dense` [batch, dim], `sparse`
[batch, vocab] (the pooled term weights, not per-token vocabulary logits: STACK.md, the
30522-wide MLM output dominates CPU time) and, for query encoders with a gate, `gate` [batch].
Batch and sequence axes are dynamic.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from uniret.config.retrieval import ExportConfig
from uniret.retrieval.encoding import EncodedTexts, encode_in_batches, to_csr

log = logging.getLogger("uniret.export")

INPUTS = ("input_ids", "attention_mask")
OUTPUTS = ("dense", "sparse", "gate")
QUERY_FILE = "query.onnx"
QUERY_INT8_FILE = "query.int8.onnx"  # int8 dynamic quantisation of query.onnx, when parity held
DOC_FILE = "doc.onnx"
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
    onnx.checker.check_model(str(path))
    return outputs


def export_encoders(model: nn.Module, tokenizer, out_dir: str | Path, cfg: ExportConfig, query_max_length: int,
                    doc_max_length: int) -> dict[str, list[str]]:
    """Export query.onnx and doc.onnx into `out_dir`; return {file: output names}."""
    out_dir = Path(out_dir)
    return {
        QUERY_FILE: export_encoder(model, tokenizer, out_dir / QUERY_FILE, True, cfg, query_max_length),
        DOC_FILE: export_encoder(model, tokenizer, out_dir / DOC_FILE, False, cfg, doc_max_length),
    }


def _session(path: Path, threads: int | None) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # warnings about unused initialisers etc. are noise here
    if threads:
        opts.intra_op_num_threads = threads
    # No busy-waiting between ops: spinning intra-op threads fight concurrent requests and other
    # processes for the cores (batch-1 queries on a busy 2-core box: p50 16.6 -> 7.9 ms).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()]
    return ort.InferenceSession(str(path), sess_options=opts, providers=providers)


class OnnxEncoder:
    """The exported query/document graphs plus the tokenizer: same encode API as the torch model."""

    def __init__(self, onnx_dir: str | Path, tokenizer, batch_size: int, query_max_length: int, doc_max_length: int,
                 threads: int | None = None, query_file: str | None = None):
        onnx_dir = Path(onnx_dir)
        for name in (QUERY_FILE, DOC_FILE):
            if not (onnx_dir / name).is_file():
                raise FileNotFoundError(f"{onnx_dir / name}: ONNX encoder not found")
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = {True: query_max_length, False: doc_max_length}
        # the int8 query graph ships only when it passed its parity check (uniret.export.quantize)
        query = query_file or (QUERY_INT8_FILE if (onnx_dir / QUERY_INT8_FILE).is_file() else QUERY_FILE)
        self.query_file = query
        self.paths = {True: onnx_dir / query, False: onnx_dir / DOC_FILE}
        self.threads = threads
        self._sessions: dict[bool, ort.InferenceSession] = {}
        self._lock = threading.Lock()
        self.session(True)  # the query graph is always needed; the document graph on first use

    def session(self, is_query: bool) -> ort.InferenceSession:
        """The query or document session, created on first use (serving never loads the doc graph)."""
        found = self._sessions.get(is_query)
        if found is None:
            with self._lock:
                found = self._sessions.get(is_query)
                if found is None:
                    found = self._sessions[is_query] = _session(self.paths[is_query], self.threads)
        return found

    def outputs(self, is_query: bool) -> list[str]:
        """Output names of the query or document graph."""
        return [o.name for o in self.session(is_query).get_outputs()]

    def _encode_batch(self, texts: Sequence[str], is_query: bool, max_length: int) -> EncodedTexts:
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="np")
        feeds = {name: enc[name].astype(np.int64) for name in INPUTS}
        session = self.session(is_query)
        values = dict(zip(self.outputs(is_query), session.run(None, feeds), strict=True))
        return EncodedTexts(
            dense=values["dense"].astype(np.float32) if "dense" in values else None,
            sparse=to_csr(values["sparse"]) if "sparse" in values else None,
            gate=values["gate"].reshape(-1).astype(np.float32) if "gate" in values else None,
        )

    def encode(self, texts: Sequence[str], is_query: bool) -> EncodedTexts:
        """Encode `texts` as queries or documents, in batches."""
        max_length = self.max_length[is_query]
        desc = "onnx encode " + ("queries" if is_query else "docs")
        return encode_in_batches(lambda b: self._encode_batch(b, is_query, max_length), texts, self.batch_size, desc)

    def encode_texts(self, texts: Sequence[str], is_query: bool, batch_size: int, max_length: int):
        """(dense ndarray | None, sparse CSR | None), like uniret.models.encode.encode_texts."""
        out = encode_in_batches(lambda b: self._encode_batch(b, is_query, max_length), texts, batch_size,
                                "onnx encode " + ("queries" if is_query else "docs"))
        return out.dense, out.sparse
