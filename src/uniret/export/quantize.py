"""int8 dynamic quantisation of the exported query encoder, kept only where parity holds.

ONNX Runtime's `quantize_dynamic` stores MatMul/Gemm weights as int8 and quantises activations
per call, which cuts the graph to about a quarter and, for MiniLM-sized encoders, batch-1 latency.
The int8 graph is compared with the fp32 graph it came from on real queries (per-query cosine of
every output, and top-10 agreement against fp32 document encodings); it is written next to
query.onnx as query.int8.onnx only when every figure reaches `min_cosine` / `min_top10_overlap`,
so serving (OnnxEncoder picks it up) never runs a graph that ranks differently.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from uniret.config.retrieval import ParityConfig, QuantizeConfig
from uniret.export.parity import failed_checks, measure_parity
from uniret.retrieval.onnx_encoder import QUERY_FILE, QUERY_INT8_FILE, OnnxEncoder

log = logging.getLogger("uniret.export")


def quantize_query_encoder(onnx_dir: str | Path, reference: OnnxEncoder, queries: Sequence[str],
                           docs: Sequence[str], cfg: QuantizeConfig, parity: ParityConfig) -> dict:
    """Write onnx_dir/query.int8.onnx when its parity with query.onnx holds; return the figures and
    whether it is used (never raises on a parity miss: the fp32 graph then stays the served one)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    onnx_dir = Path(onnx_dir)
    out: dict = {"enabled": cfg.enabled}
    if not cfg.enabled:
        return {**out, "used": False, "reason": "disabled (index.export.quantize.enabled)"}
    fd, tmp_name = tempfile.mkstemp(prefix=".query.int8.", suffix=".onnx", dir=onnx_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        start = time.perf_counter()
        quantize_dynamic(str(onnx_dir / QUERY_FILE), str(tmp), weight_type=QuantType.QInt8,
                         per_channel=cfg.per_channel)
        out["quantize_seconds"] = round(time.perf_counter() - start, 2)
        candidate = OnnxEncoder(onnx_dir, reference.tokenizer, reference.batch_size, reference.max_length[True],
                                reference.max_length[False], reference.threads, query_file=tmp.name)
        figures = measure_parity(reference, candidate, queries, docs)
        # documents are encoded by the same fp32 graph on both sides: only the query figures say anything
        out["parity"] = {k: v for k, v in figures.items() if not k.startswith("doc_") and "docs_per_s" not in k}
        out["bytes"] = {"fp32": (onnx_dir / QUERY_FILE).stat().st_size, "int8": tmp.stat().st_size}
        bounds = ParityConfig(min_cosine=cfg.min_cosine, min_top10_overlap=parity.min_top10_overlap,
                              queries=parity.queries, docs=parity.docs)
        failures = failed_checks(out["parity"], bounds)
        if failures:
            log.info("int8 query encoder not used (parity): %s", "; ".join(failures))
            return {**out, "used": False, "reason": "parity: " + "; ".join(failures)}
        os.replace(tmp, onnx_dir / QUERY_INT8_FILE)
        log.info("int8 query encoder kept: %s", out["parity"])
        return {**out, "used": True}
    finally:
        tmp.unlink(missing_ok=True)
