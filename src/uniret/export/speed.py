"""Torch vs ONNX Runtime encoder speed on real text: batch-1 query latency and corpus docs/s.

    python -m uniret.export.speed --dataset scifact [--queries 100 --docs 500]

builds the UnifieR encoder on the SPLADE-tiny backbone (models factory), exports it, and prints
JSON figures. Speed is reported, never asserted (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from itertools import islice

from uniret.retrieval.encoding import TextEncoder

WARMUP = 5  # untimed calls first: session/graph initialisation is not per-query cost


def query_latency_ms(encoder: TextEncoder, queries: Sequence[str]) -> dict[str, float]:
    """Median and p95 latency (ms) of encoding one query at a time (batch 1)."""
    for q in queries[:WARMUP]:
        encoder.encode([q], is_query=True)
    times = []
    for q in queries:
        start = time.perf_counter()
        encoder.encode([q], is_query=True)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"median_ms": round(statistics.median(times), 3), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3)}


def docs_per_second(encoder: TextEncoder, docs: Sequence[str]) -> float:
    """Corpus encoding throughput (documents per second)."""
    encoder.encode(list(docs[:WARMUP]), is_query=False)
    start = time.perf_counter()
    encoder.encode(list(docs), is_query=False)
    return round(len(docs) / (time.perf_counter() - start), 2)


def compare(torch_enc: TextEncoder, onnx_enc: TextEncoder, queries: Sequence[str], docs: Sequence[str]) -> dict:
    """Both figures for both encoders on the same texts."""
    return {
        "query_batch1": {"torch": query_latency_ms(torch_enc, queries), "onnx": query_latency_ms(onnx_enc, queries)},
        "corpus_docs_per_s": {"torch": docs_per_second(torch_enc, docs), "onnx": docs_per_second(onnx_enc, docs)},
        "queries": len(queries),
        "docs": len(docs),
    }


def main(argv: list[str] | None = None) -> int:
    import torch

    from uniret.config import load_params
    from uniret.config.models import ModelConfig
    from uniret.data.beir import BeirDataset
    from uniret.data.roots import resolve_data_root
    from uniret.export.onnx import OnnxEncoder, export_encoders
    from uniret.models.factory import build_model
    from uniret.retrieval.encoding import TorchTextEncoder

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--profile", default=None)
    p.add_argument("--data", default=None)
    p.add_argument("--dataset", default="scifact")
    p.add_argument("--backbone", default="splade-tiny")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--docs", type=int, default=500)
    args = p.parse_args(argv)

    params = load_params(args.params, args.profile)
    index_cfg = params.section("index")
    dataset = BeirDataset(resolve_data_root(args.data, params.section("data").root) / args.dataset, args.dataset)
    model_cfg = ModelConfig(arch="unifier", backbone=args.backbone)
    model = build_model(model_cfg).eval()
    qlen, dlen, batch = model_cfg.query_max_length, model_cfg.doc_max_length, index_cfg.doc_batch_size
    queries = list(islice(dataset.queries().values(), args.queries))
    docs = [d.contents for d in islice(dataset.iter_corpus(), args.docs)]
    with tempfile.TemporaryDirectory() as tmp:
        export_encoders(model, model.tokenizer, tmp, index_cfg.export, qlen, dlen)
        figures = compare(
            TorchTextEncoder(model, model.tokenizer, batch, qlen, dlen),
            OnnxEncoder(tmp, model.tokenizer, batch, qlen, dlen),
            queries,
            docs,
        )
    figures.update(backbone=args.backbone, query_max_length=qlen, doc_max_length=dlen, batch_size=batch,
                   torch_threads=torch.get_num_threads(), machine=platform.machine(), python=platform.python_version())
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
