"""The ONNX export's form, previous vs current, from one checkpoint: speed, memory and outputs.

Usage: python lab/export_form.py CHECKPOINT [--data ../shared/data] [--docs 192]
       [--queries 200] [--rounds 3] [--out lab/results/export_form.json]

Exports the checkpoint's query and document graphs twice: in the previous form (traced SDPA
attention, vocabulary GEMM as W . S^T) and in the current one (`uniret.export.onnx`: eager
attention, S . W^T), and int8-quantises both document graphs as the index stage does
(per-channel, reduced range). Then, on SciFact documents at the model's document length:
- docs/s of each document graph, in length-sorted batches of 32, the graphs interleaved per round;
- peak RSS of one batch of 32 at full length run three times, each graph in its own process;
- the batch-1 median ms of each query graph over SciFact queries, interleaved per round;
- the minimum cosine of the current graphs' outputs to the previous ones' (same function).
Take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np

BATCH = 32


def _session(path: Path, threads: int = 2):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def _feeds(tokenizer, texts: list[str], max_length: int, batch: int) -> list[dict]:
    """Length-sorted batches, each padded to its own longest text (as the corpus passes run)."""
    texts = sorted(texts, key=len)
    out = []
    for start in range(0, len(texts), batch):
        enc = tokenizer(texts[start : start + batch], truncation=True, max_length=max_length, padding=True,
                        return_tensors="np")
        out.append({k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask")})
    return out


def export_previous_form(model, tokenizer, out_dir: Path, cfg, qlen: int, dlen: int) -> None:
    """query.onnx/doc.onnx as exported before 2026-11-26: the model's own attention, W . S^T."""
    from uniret.export import onnx as export_onnx

    for name, is_query, length in (("query.onnx", True, qlen), ("doc.onnx", False, dlen)):
        outputs = export_onnx.produced_outputs(model, tokenizer, is_query, length)
        graph = export_onnx.EncoderGraph(model, is_query, outputs).eval()
        export_onnx._export(graph, tokenizer, out_dir / name, outputs, cfg, length)


def _own_peak_rss_mb() -> float:
    """This process's peak RSS (MB). VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the
    parent through fork and exec, so a child of a large process would report the parent's peak."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _peak_rss_mb(path: str, feeds: dict) -> float:
    """Peak RSS (MB) of a fresh process that loads `path` and runs one batch three times (ORT's
    memory arena may grow past the first run, and a corpus pass runs many batches)."""
    session = _session(Path(path))
    for _ in range(3):
        session.run(None, feeds)
    return _own_peak_rss_mb()


def _min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    return float(((a * b).sum(axis=1) / np.maximum(na * nb, 1e-12)).min())


def measure(dirs: dict[str, Path], tokenizer, docs: list[str], queries: list[str], qlen: int, dlen: int,
            rounds: int) -> dict:
    """Speed, peak RSS and output agreement of the graphs in dirs[form] (form: previous, current)."""
    doc_feeds = _feeds(tokenizer, docs, dlen, BATCH)
    query_feeds = _feeds(tokenizer, queries, qlen, 1)
    graphs = {(form, kind): dirs[form] / f"doc{suffix}.onnx" for form in dirs
              for kind, suffix in (("fp32", ""), ("int8", ".int8"))}
    sessions = {key: _session(path) for key, path in graphs.items()}
    query_sessions = {form: _session(dirs[form] / "query.onnx") for form in dirs}
    doc_rates: dict = {key: [] for key in graphs}
    query_ms: dict = {form: [] for form in dirs}
    for _ in range(rounds):
        for key, session in sessions.items():
            start = time.perf_counter()
            for feed in doc_feeds:
                session.run(None, feed)
            doc_rates[key].append(round(len(docs) / (time.perf_counter() - start), 2))
        for form, session in query_sessions.items():
            times = []
            for feed in query_feeds:
                start = time.perf_counter()
                session.run(None, feed)
                times.append(time.perf_counter() - start)
            query_ms[form].append(round(float(np.median(times)) * 1000, 3))
    full = _feeds(tokenizer, sorted(docs, key=len)[-BATCH:], dlen, BATCH)[0]
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        peak = {key: round(pool.apply(_peak_rss_mb, (str(path), full)), 1) for key, path in graphs.items()}
    agreement = {}
    for kind, feeds in (("doc", doc_feeds), ("query", query_feeds[:50])):
        pair = {form: (sessions[(form, "fp32")] if kind == "doc" else query_sessions[form]) for form in dirs}
        outs = {form: [s.run(None, f) for f in feeds] for form, s in pair.items()}
        names = [o.name for o in pair["current"].get_outputs()]  # dense and/or sparse (and gate)
        for i, channel in enumerate(names):
            if channel in ("dense", "sparse"):
                prev = np.concatenate([o[i] for o in outs["previous"]])
                cur = np.concatenate([o[i] for o in outs["current"]])
                agreement[f"{kind}_{channel}_min_cosine"] = _min_cosine(prev, cur)
    return {
        "doc_docs_per_s": {f"{form}/{kind}": rates for (form, kind), rates in doc_rates.items()},
        "doc_batch_peak_rss_mb": {f"{form}/{kind}": mb for (form, kind), mb in peak.items()},
        "query_batch1_median_ms": query_ms,
        "current_vs_previous_fp32": agreement,
        "bytes": {f"{form}/{p.name}": p.stat().st_size for form in dirs for p in sorted(dirs[form].glob("*.onnx"))},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--docs", type=int, default=192)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="lab/results/export_form.json")
    args = parser.parse_args()

    from onnxruntime.quantization import QuantType, quantize_dynamic

    from uniret.config.retrieval import ExportConfig
    from uniret.data.beir import BeirDataset
    from uniret.export.onnx import export_encoders
    from uniret.models.factory import load_model

    model, tokenizer = load_model(args.checkpoint)
    qlen, dlen = model.model_config.query_max_length, model.model_config.doc_max_length
    scifact = BeirDataset(Path(args.data) / "scifact", "scifact")
    docs = [d.contents for d in islice(scifact.iter_corpus(), args.docs)]
    queries = list(islice(scifact.queries().values(), args.queries))
    cfg = ExportConfig()
    with tempfile.TemporaryDirectory(prefix="export_form.") as tmp:
        dirs = {"previous": Path(tmp) / "previous", "current": Path(tmp) / "current"}
        for path in dirs.values():
            path.mkdir()
        export_previous_form(model, tokenizer, dirs["previous"], cfg, qlen, dlen)
        export_encoders(model, tokenizer, dirs["current"], cfg, qlen, dlen)
        for path in dirs.values():
            quantize_dynamic(str(path / "doc.onnx"), str(path / "doc.int8.onnx"), weight_type=QuantType.QInt8,
                             per_channel=True, reduce_range=True)
        result = measure(dirs, tokenizer, docs, queries, qlen, dlen, args.rounds)
    result.update(parent_peak_rss_mb=round(_own_peak_rss_mb(), 1), checkpoint=Path(args.checkpoint).name, docs=len(docs), queries=len(queries), rounds=args.rounds,
                  doc_max_length=dlen, started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("doc_docs_per_s", "doc_batch_peak_rss_mb", "query_batch1_median_ms")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
