"""Query encoding (batch 1) and corpus encoding (docs/s): torch eager vs ONNX Runtime, same texts."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from uniret.bench.modes import time_queries
from uniret.bench.stats import latency_summary

log = logging.getLogger("uniret.bench")


def load_torch_encoder(checkpoint: Path, batch_size: int, query_max_length: int, doc_max_length: int, threads: int):
    """The torch checkpoint behind the bundle as a TextEncoder (eager mode, CPU threads = `threads`)."""
    import torch

    from uniret.models.factory import load_model
    from uniret.retrieval.encoding import TorchTextEncoder

    torch.set_num_threads(threads)
    model, tokenizer = load_model(checkpoint)
    return TorchTextEncoder(model, tokenizer, batch_size, query_max_length, doc_max_length)


def onnx_encoder(bundle_dir: Path, tokenizer, batch_size: int, query_max_length: int, doc_max_length: int,
                 threads: int):
    """The bundle's exported graphs as a TextEncoder (onnxruntime intra-op threads = `threads`)."""
    from uniret.retrieval.onnx_encoder import OnnxEncoder

    return OnnxEncoder(Path(bundle_dir) / "onnx", tokenizer, batch_size, query_max_length, doc_max_length, threads)


def _encode_only(encoder):
    """A `search`-shaped callable that only encodes the query (for `time_queries`)."""

    def call(queries: dict[str, str]) -> dict:
        encoder.encode(list(queries.values()), True)
        return {}

    return call


def query_encoding(encoders: dict, queries: dict[str, str], warmup: int) -> dict:
    """Batch-1 query encoding latency per encoder; `onnx_speedup` = torch p50 / onnx p50."""
    out = {}
    for name, enc in encoders.items():
        latencies, _ = time_queries(_encode_only(enc), queries, warmup, f"encode queries ({name})")
        out[name] = latency_summary(latencies)
    if "torch" in out and "onnx" in out and out["onnx"]["p50_ms"]:
        out["onnx_speedup_p50"] = round(out["torch"]["p50_ms"] / out["onnx"]["p50_ms"], 2)
    return out


def corpus_encoding(encoders: dict, docs: list[str]) -> dict:
    """Documents per second per encoder over the same documents (batched as configured)."""
    out = {}
    for name, enc in encoders.items():
        enc.encode(docs[: min(len(docs), 2)], False)  # warm-up: session/graph initialisation
        start = time.perf_counter()
        enc.encode(docs, False)
        seconds = time.perf_counter() - start
        out[name] = {"docs": len(docs), "seconds": round(seconds, 3), "docs_per_s": round(len(docs) / seconds, 2)}
        log.info("corpus encoding %s: %s", name, out[name])
    if "torch" in out and "onnx" in out:
        out["onnx_speedup"] = round(out["onnx"]["docs_per_s"] / out["torch"]["docs_per_s"], 2)
    return out
