"""int8 dynamic quantisation of the exported query and document encoders, kept only where parity holds.

ONNX Runtime's `quantize_dynamic` stores MatMul/Gemm weights as int8 and quantises activations
per call, which cuts the graph to about a quarter and, for MiniLM-sized encoders, batch-1 latency.
The int8 graph is compared with the fp32 graph it came from on real queries (per-query cosine of
every output, and top-10 agreement against fp32 document encodings); it is written next to
query.onnx as query.int8.onnx only when every figure reaches `min_cosine` / `min_top10_overlap`,
so serving (OnnxEncoder picks it up) never runs a graph that ranks differently.

The document graph (doc.int8.onnx, for the corpus passes of index and evaluate) is held to its own,
looser bounds (`index.export.quantize_docs`), chosen from a dev-split measurement of what int8
documents cost in nDCG@10 (experiment log, E08).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from uniret.config.retrieval import DocQuantizeConfig, ParityConfig, QuantizeConfig
from uniret.export.parity import RememberingEncoder, failed_checks, measure_parity
from uniret.retrieval.onnx_encoder import DOC_FILE, DOC_INT8_FILE, QUERY_FILE, QUERY_INT8_FILE, OnnxEncoder

log = logging.getLogger("uniret.export")


@contextlib.contextmanager
def _quiet_root_logger():
    """onnxruntime's quantizer logs a line per tensor on the root logger (hundreds at -v)."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        root.setLevel(level)


def _quantize_graph(onnx_dir: Path, is_query: bool, reference: OnnxEncoder | RememberingEncoder, queries: Sequence[str],
                    docs: Sequence[str], per_channel: bool, reduce_range: bool, bounds: ParityConfig) -> dict:
    """Quantise one graph of onnx_dir to a temp file, compare it with the fp32 graph, keep it under
    its int8 name when every figure holds (the temp file is removed either way)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source, target = (QUERY_FILE, QUERY_INT8_FILE) if is_query else (DOC_FILE, DOC_INT8_FILE)
    side = "query" if is_query else "doc"
    fd, tmp_name = tempfile.mkstemp(prefix=f".{side}.int8.", suffix=".onnx", dir=onnx_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    out: dict = {"enabled": True}
    try:
        start = time.perf_counter()
        with _quiet_root_logger():
            quantize_dynamic(str(onnx_dir / source), str(tmp), weight_type=QuantType.QInt8,
                             per_channel=per_channel, reduce_range=reduce_range)
        out["quantize_seconds"] = round(time.perf_counter() - start, 2)
        files = {"query_file": reference.query_file, "doc_file": reference.doc_file}
        files["query_file" if is_query else "doc_file"] = tmp.name
        int8 = OnnxEncoder(onnx_dir, reference.tokenizer, reference.batch_size, reference.max_length[True],
                           reference.max_length[False], reference.threads, **files)
        figures = measure_parity(reference, _OneSide(int8, reference, is_query), queries, docs)
        # the other side runs the same graph in both encoders: only this side's figures say anything
        other = "doc_" if is_query else "query_"
        out["parity"] = {k: v for k, v in figures.items() if not k.startswith(other) and "docs_per_s" not in k}
        if not is_query:  # the document graphs' speed: what int8 is for (a remembering reference
            # answered from memory here, so its speed is that of its own first pass)
            fp32 = getattr(reference, "docs_per_s", None) or figures["torch_docs_per_s"]
            out["parity"].update(fp32_docs_per_s=fp32, int8_docs_per_s=figures["onnx_docs_per_s"])
        out["bytes"] = {"fp32": (onnx_dir / source).stat().st_size, "int8": tmp.stat().st_size}
        failures = failed_checks(out["parity"], bounds)
        if failures:
            log.info("int8 %s encoder not used (parity): %s", side, "; ".join(failures))
            return {**out, "used": False, "reason": "parity: " + "; ".join(failures)}
        os.replace(tmp, onnx_dir / target)
        log.info("int8 %s encoder kept: %s", side, out["parity"])
        return {**out, "used": True}
    finally:
        tmp.unlink(missing_ok=True)


class _OneSide:
    """The int8 graph on its own side; the other side is the reference's (the same fp32 graph file),
    so a remembering reference answers it without encoding again."""

    def __init__(self, int8: OnnxEncoder, reference: OnnxEncoder | RememberingEncoder, is_query: bool):
        self.int8, self.reference, self.is_query = int8, reference, is_query

    def encode(self, texts: Sequence[str], is_query: bool):
        return (self.int8 if is_query == self.is_query else self.reference).encode(texts, is_query=is_query)


def quantize_query_encoder(onnx_dir: str | Path, reference: OnnxEncoder | RememberingEncoder, queries: Sequence[str],
                           docs: Sequence[str], cfg: QuantizeConfig, parity: ParityConfig) -> dict:
    """Write onnx_dir/query.int8.onnx when its parity with query.onnx holds; return the figures and
    whether it is used (never raises on a parity miss: the fp32 graph then stays the served one)."""
    if not cfg.enabled:
        return {"enabled": False, "used": False, "reason": "disabled (index.export.quantize.enabled)"}
    docs = docs[: cfg.docs]
    bounds = ParityConfig(min_cosine=cfg.min_cosine, min_top10_overlap=parity.min_top10_overlap,
                          queries=parity.queries, docs=max(1, len(docs)))
    return _quantize_graph(Path(onnx_dir), True, reference, queries, docs, cfg.per_channel, False, bounds)


def quantize_doc_encoder(onnx_dir: str | Path, reference: OnnxEncoder | RememberingEncoder, queries: Sequence[str],
                         docs: Sequence[str], cfg: DocQuantizeConfig) -> dict:
    """Write onnx_dir/doc.int8.onnx when its documents agree with doc.onnx's (per-document cosine and
    top-10 overlap of real queries over them, both within `cfg`); corpus passes then encode with it.

    Its bounds are looser than the query graph's: a document's int8 encoding is compared through the
    rankings it produces, and what the bound must guarantee was measured on a dev split (E08).
    Never raises on a miss: the fp32 graph then encodes the corpus.
    """
    if not cfg.enabled:
        return {"enabled": False, "used": False, "reason": "disabled (index.export.quantize_docs.enabled)"}
    bounds = ParityConfig(min_cosine=cfg.min_cosine, min_top10_overlap=cfg.min_top10_overlap,
                          queries=len(queries), docs=max(1, len(docs)))
    return _quantize_graph(Path(onnx_dir), False, reference, queries, docs[: cfg.docs], cfg.per_channel,
                           cfg.reduce_range, bounds)
