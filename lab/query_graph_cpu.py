"""CPU cost and fidelity of a bundle's ONNX query graph: fp32 vs int8 variants (issue 11).

Usage: python lab/query_graph_cpu.py BUNDLE [--data ../shared/data] [--queries 200]
       [--out lab/results/query_graph_cpu.json]

Per variant: CPU ms per query at one intra-op thread (time.process_time over SciFact test queries,
batch 1, after 20 warm-up runs) and the min/mean cosine of each output to the fp32 graph's on
SciFact train queries. Variants: fp32 (served), int8 dynamic per-tensor, per-channel, and
per-channel on the dense tower's feed-forward matmuls only (weights 384x1536 / 1536x384).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def _session(path: Path, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = threads
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def _feeds(tokenizer, texts: list[str], max_length: int) -> list[dict]:
    out = []
    for text in texts:
        enc = tokenizer([text], truncation=True, max_length=max_length, return_tensors="np")
        out.append({k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask")})
    return out


def _ffn_excluded(path: Path) -> list[str]:
    """MatMul nodes that are not a feed-forward layer of the dense tower (left in fp32)."""
    import onnx

    model = onnx.load(str(path))
    shapes = {i.name: tuple(i.dims) for i in model.graph.initializer}
    ffn = {(384, 1536), (1536, 384)}
    return [n.name for n in model.graph.node if n.op_type in ("MatMul", "Gemm")
            and not any(shapes.get(x) in ffn for x in n.input)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--out", default="lab/results/query_graph_cpu.json")
    args = parser.parse_args()

    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoTokenizer

    from uniret.bench.machine import machine_info
    from uniret.data.beir import BeirDataset
    from uniret.utils.files import atomic_write_json, shown_path

    bundle = Path(args.bundle)
    fp32 = bundle / "onnx" / "query.onnx"
    tokenizer = AutoTokenizer.from_pretrained(bundle / "tokenizer")
    scifact = BeirDataset(Path(args.data) / "scifact", "scifact")
    timed = _feeds(tokenizer, list(scifact.split_queries("test").values())[: args.queries], args.max_length)
    compared = _feeds(tokenizer, list(scifact.split_queries("train").values())[: args.queries], args.max_length)
    reference = _session(fp32, 1)
    names = [o.name for o in reference.get_outputs()]
    ref_out = [reference.run(None, f) for f in compared]
    rows = []
    with tempfile.TemporaryDirectory(prefix="uniret-qgraph-") as tmp:
        variants = {"fp32": fp32}
        for name, kwargs in (("int8_per_tensor", {"per_channel": False}), ("int8_per_channel", {"per_channel": True}),
                             ("int8_ffn_only", {"per_channel": True, "nodes_to_exclude": _ffn_excluded(fp32)})):
            variants[name] = Path(tmp) / f"{name}.onnx"
            quantize_dynamic(str(fp32), str(variants[name]), weight_type=QuantType.QInt8, **kwargs)
        for name, path in variants.items():
            session = _session(path, 1)
            for f in timed[:20]:
                session.run(None, f)
            start = time.process_time()
            for f in timed:
                session.run(None, f)
            cpu_ms = (time.process_time() - start) / len(timed) * 1e3
            cos: dict[str, list[float]] = {n: [] for n in names}
            for f, ref in zip(compared, ref_out, strict=True):
                for n, a, b in zip(names, ref, session.run(None, f), strict=True):
                    a, b = a.ravel(), b.ravel()
                    cos[n].append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12)))
            row = {"variant": name, "cpu_ms_per_query": round(cpu_ms, 2),
                   "cosine": {n: {"min": round(min(v), 4), "mean": round(float(np.mean(v)), 4)} for n, v in cos.items()}}
            print(row, flush=True)
            rows.append(row)
    atomic_write_json(args.out, {"bundle": shown_path(bundle, Path.cwd()), "queries": len(timed),
                                 "machine": machine_info(), "variants": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
