"""The MS MARCO scale plan's figures, computed from measured encoding speed and stated assumptions.

    python -m uniret.bench.scale_plan --encoding results/scale/encoding.json \
        --out results/scale

Reads the docs/s per CPU core that `python -m uniret.bench.encoding --threads 1` measured (with the
mean tokens per document of the measured slice) and writes plan.json / plan.md: CPU core-hours
and GPU hours per corpus pass, index bytes per document and in total, and the DAG's wall time on
1, 8 and 32 GPUs split by stage group. Every assumption is a named field of `Assumptions` with
its source, so a better figure replaces one number; docs/scale.md explains the model.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from uniret.utils.files import atomic_write_json, atomic_write_text


@dataclass(frozen=True)
class Assumptions:
    """Inputs that cannot be measured here, with where they come from."""

    corpus_docs: int = 8_841_823  # MS MARCO passage collection
    doc_tokens: float = 80.0  # mean word pieces per passage (~56 words x ~1.4 pieces; not measured here)
    train_queries: int = 502_939  # MS MARCO train queries with a judged positive
    gpu_peak_tflops: float = 312.0  # A100 BF16 dense Tensor Core peak (NVIDIA A100 datasheet)
    gpu_mfu_inference: float = 0.35  # assumed fraction of peak for encoder inference at <= 128 tokens
    # LED (Zhang et al., "LED", ../papers/led.txt): its two-stage training ran "about 32 hours" on one A100
    train_hours_1gpu: float = 32.0
    scaling_efficiency: dict[int, float] = field(default_factory=lambda: {1: 1.0, 8: 0.85, 32: 0.7})
    corpus_passes: int = 2  # mine (warmup model) + index; evaluate reuses the index's encodings (shared cache)
    mine_search_hours_cpu: float = 8.0  # lexical top-100 of every train query, one thread (assumed ~60 ms/query)
    index_build_hours: float = 1.5  # faiss HNSW (M=32, efC=200) + Lucene impact index on one node (assumed)
    eval_hours: float = 0.25  # dev queries + the small BEIR sets (encoding of queries only)
    cpu_threads_per_node: int = 32
    hnsw_m: int = 32
    pq_m: int = 16
    pq_nbits: int = 8
    impact_bytes_per_term: float = 613.12 / 251.26  # measured: results/bench/bench.md (SciFact bundle)
    terms_per_doc: float = 120.0  # a trained FLOPS-regularised passage (SPLADE reports ~100-150; assumed)


# Forward FLOPs per token of the encoders (2 x multiply-adds of the layers + the MLM head when present).
def encoder_flops_per_token(layers: int, hidden: int, intermediate: int, vocab: int | None) -> float:
    """2 * (attention projections 4h^2 + feed-forward 2hi) per layer, + 2hV for an MLM head."""
    per_layer = 2 * (4 * hidden * hidden + 2 * hidden * intermediate)
    return layers * per_layer + (2 * hidden * vocab if vocab else 0)


MODELS = {  # name -> (layers, hidden, intermediate, vocab of the MLM head or None, dense dim)
    "unifier (splade-tiny, default)": (3, 128, 512, 30522, 128),
    "minilm (led/clear dense)": (6, 384, 1536, None, 384),
    "unifier paper-scale (BERT-base 6+6+2)": (14, 768, 3072, 30522, 768),
}


def plan(encoding: dict, a: Assumptions) -> dict:
    """All figures of the plan (see module doc)."""
    cpu = []
    for row in encoding["rows"]:
        tokens = row.get("mean_tokens") or row["max_length"]
        for path in ("torch_after", "onnx"):
            rate = (row.get(path) or {}).get("docs_per_s")
            if not rate:
                continue
            tok_s = rate * tokens
            cpu.append({"model": row["model"], "max_length": row["max_length"], "path": path,
                        "docs_per_s_core": rate, "tokens_per_s_core": round(tok_s, 1),
                        "core_hours_per_pass": round(a.corpus_docs * a.doc_tokens / tok_s / 3600, 1)})
    gpu_tflops = a.gpu_peak_tflops * a.gpu_mfu_inference
    gpu, sizes = [], []
    for name, (layers, hidden, inter, vocab, dim) in MODELS.items():
        flops_doc = encoder_flops_per_token(layers, hidden, inter, vocab) * a.doc_tokens
        docs_s = gpu_tflops * 1e12 / flops_doc
        gpu.append({"model": name, "gflops_per_doc": round(flops_doc / 1e9, 2), "docs_per_s_gpu": round(docs_s),
                    "gpu_hours_per_pass": round(a.corpus_docs / docs_s / 3600, 2)})
        per_doc = {"flat": dim * 4, "hnsw": dim * 4 + 2 * a.hnsw_m * 4 + 8, "ivfpq": a.pq_m * a.pq_nbits // 8 + 8}
        if vocab:
            per_doc["impact"] = round(a.impact_bytes_per_term * a.terms_per_doc)
        sizes.append({"model": name, "dim": dim, **{f"{k}_bytes_per_doc": v for k, v in per_doc.items()},
                      **{f"{k}_gb": round(v * a.corpus_docs / 1e9, 1) for k, v in per_doc.items()}})
    paper = gpu[-1]
    dag = []
    for n, eff in a.scaling_efficiency.items():
        groups = {
            "training": a.train_hours_1gpu / (n * eff),
            "corpus encoding": a.corpus_passes * paper["gpu_hours_per_pass"] / (n * 0.95),
            "mining search": a.mine_search_hours_cpu / (a.cpu_threads_per_node * max(1, n // 8)),
            "index build": a.index_build_hours,
            "evaluate": a.eval_hours,
        }
        total = sum(groups.values())
        dag.append({"gpus": n, "hours": round(total, 2),
                    "share": {k: round(v / total, 2) for k, v in groups.items()},
                    "group_hours": {k: round(v, 2) for k, v in groups.items()}})
    return {"assumptions": asdict(a), "cpu": cpu, "gpu": gpu, "index_sizes": sizes, "dag": dag,
            "gpu_effective_tflops": gpu_tflops, "measured_under_load": True}


def render(p: dict) -> str:
    """Markdown tables of a plan."""
    out = ["| model | max len | path | docs/s/core | tokens/s/core | core-hours per 8.8M pass |", "|---|---:|---|---:|---:|---:|"]
    out += [f"| {r['model']} | {r['max_length']} | {r['path']} | {r['docs_per_s_core']} | {r['tokens_per_s_core']} | "
            f"{r['core_hours_per_pass']} |" for r in p["cpu"]]
    out += ["", "| encoder | GFLOP/doc | docs/s per A100 (est.) | GPU-hours per pass |", "|---|---:|---:|---:|"]
    out += [f"| {r['model']} | {r['gflops_per_doc']} | {r['docs_per_s_gpu']} | {r['gpu_hours_per_pass']} |"
            for r in p["gpu"]]
    out += ["", "| encoder | dim | Flat B/doc (GB) | HNSW B/doc (GB) | IVF-PQ B/doc (GB) | impact B/doc (GB) |",
            "|---|---:|---:|---:|---:|---:|"]
    for r in p["index_sizes"]:
        cells = [f"{r[f'{k}_bytes_per_doc']} ({r[f'{k}_gb']})" if f"{k}_bytes_per_doc" in r else "-"
                 for k in ("flat", "hnsw", "ivfpq", "impact")]
        out.append(f"| {r['model']} | {r['dim']} | " + " | ".join(cells) + " |")
    groups = list(p["dag"][0]["group_hours"])
    out += ["", "| GPUs | DAG hours | " + " | ".join(groups) + " |", "|---:|---:|" + "---:|" * len(groups)]
    out += [f"| {d['gpus']} | {d['hours']} | " + " | ".join(f"{d['group_hours'][g]} h ({d['share'][g]:.0%})"
                                                           for g in groups) + " |" for d in p["dag"]]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """CLI entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encoding", default="results/scale/encoding.json")
    ap.add_argument("--tokens", nargs="*", default=[],
                    help="mean tokens per measured doc at each max length, as LEN=TOKENS")
    ap.add_argument("--out", default="results/scale")
    args = ap.parse_args(argv)
    encoding = json.loads(Path(args.encoding).read_text(encoding="utf-8"))
    tokens = dict(item.split("=") for item in args.tokens)
    for row in encoding["rows"]:
        row["mean_tokens"] = float(tokens.get(str(row["max_length"]), row["max_length"]))
    result = plan(encoding, Assumptions())
    out = Path(args.out)
    atomic_write_json(out / "plan.json", result)
    atomic_write_text(out / "plan.md", render(result))
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
