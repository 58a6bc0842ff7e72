"""The two corpus-sized passes E105 moved from torch to onnxruntime, each way, alternated: the mine
stage's documents (a checkpoint's pair model, both heads, through its ONNX twin) and the static
tower's teacher texts (the checkpoint's dense query output, through its query graph cut to `dense`).

Usage: python lab/onnx_passes.py --checkpoint artifacts/warmup/model [--docs 800] [--length 128]
           [--texts 2000] [--query-length 64] [--rounds 2] [--data ../shared/data] [--dataset scifact]
           [--out lab/results/onnx_passes.json]

Documents: the first `--docs` of the dataset's corpus, cut at `--length` tokens, in the params'
batch (uniret.retrieval.encoding's length-sorted batches), as the mine stage encodes them. Teacher
texts: `--texts` sentences of the corpus drawn as the static tower draws them (uniret.data.
pseudo_queries, sentences only), in batches of 128 as the tower encodes them. Both graphs are
exported here with the legacy exporter; the index stage cuts its own (dynamo) query graph. Texts/s
and the smallest cosine between the two encodings. Take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, type=Path)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--dataset", default="scifact")
    ap.add_argument("--docs", type=int, default=800)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--query-length", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("lab/results/onnx_passes.json"))
    args = ap.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).parent))
    from encoding_batch import _shown

    from uniret.bench.machine import library_versions, machine_info
    from uniret.config.retrieval import ExportConfig, ParityConfig
    from uniret.data.beir import BeirDataset
    from uniret.data.pseudo_queries import PseudoQuerySpec, pseudo_queries
    from uniret.export.parity import row_cosines
    from uniret.export.subgraph import DenseGraph, dense_subgraph
    from uniret.export.twin import onnx_twin
    from uniret.models.factory import load_model
    from uniret.retrieval.encoding import TorchTextEncoder
    from uniret.retrieval.onnx_encoder import QUERY_FILE
    from uniret.training.static_tower import teacher_vectors

    model, tokenizer = load_model(args.checkpoint)
    dataset = BeirDataset(args.data / args.dataset, args.dataset)
    docs = [d.contents for d in islice(dataset.iter_corpus(), args.docs)]
    spec = PseudoQuerySpec(False, False, args.texts, 0, 4, 40, 7)
    texts = pseudo_queries(dataset, [], "train", set(), spec)[0][:args.texts]
    qlen = args.query_length
    result: dict = {"checkpoint": _shown(args.checkpoint), "dataset": args.dataset, "machine": machine_info(),
                    "libraries": library_versions(), "rounds": args.rounds}
    with tempfile.TemporaryDirectory() as work:
        torch_docs = TorchTextEncoder(model, tokenizer, args.batch, qlen, args.length)
        # parity on a handful of texts: the timing below is the point, the stage checks its own
        parity = ExportConfig(parity=ParityConfig(queries=4, docs=8))
        export_s, twin = _timed(lambda: onnx_twin(torch_docs, Path(work) / "twin", texts[:4], docs[:8], parity))
        graph_s, graph = _timed(lambda: DenseGraph(dense_subgraph(
            Path(work) / "twin" / QUERY_FILE, Path(work) / "dense.onnx")))
        if twin is None:
            raise SystemExit("the ONNX twin failed its parity check; see the log")
        seconds: dict[str, list[float]] = {k: [] for k in ("docs_torch", "docs_onnx", "teacher_torch", "teacher_onnx")}
        for _ in range(args.rounds):
            t, ref_docs = _timed(lambda: torch_docs.encode(docs, is_query=False))
            seconds["docs_torch"].append(t)
            t, got_docs = _timed(lambda: twin.encode(docs, is_query=False))
            seconds["docs_onnx"].append(t)
            t, ref_teacher = _timed(lambda: teacher_vectors(model, tokenizer, texts, qlen))
            seconds["teacher_torch"].append(t)
            t, got_teacher = _timed(lambda: teacher_vectors(model, tokenizer, texts, qlen, dense=graph))
            seconds["teacher_onnx"].append(t)
    result["mine_docs"] = {
        "docs": len(docs), "length": args.length, "batch": args.batch, "twin_export_and_parity_s": round(export_s, 2),
        "docs_per_s": {side: [round(len(docs) / s, 1) for s in seconds[f"docs_{side}"]] for side in ("torch", "onnx")},
        "dense_min_cosine": round(float(row_cosines(ref_docs.dense, got_docs.dense).min()), 7),
        "sparse_min_cosine": round(float(row_cosines(ref_docs.sparse, got_docs.sparse).min()), 7)
        if ref_docs.sparse is not None else None,
    }
    result["teacher_texts"] = {
        "texts": len(texts), "query_length": qlen, "batch": 128, "cut_graph_s": round(graph_s, 2),
        "texts_per_s": {side: [round(len(texts) / s, 1) for s in seconds[f"teacher_{side}"]]
                        for side in ("torch", "onnx")},
        "min_cosine": round(float(row_cosines(ref_teacher, got_teacher).min()), 7),
    }
    for name in ("mine_docs", "teacher_texts"):
        rates = result[name]["docs_per_s" if name == "mine_docs" else "texts_per_s"]
        result[name]["onnx_over_torch"] = [round(o / t, 2) for o, t in zip(rates["onnx"], rates["torch"], strict=True)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("mine_docs", "teacher_texts")}, indent=2))
    return result


if __name__ == "__main__":
    main()
