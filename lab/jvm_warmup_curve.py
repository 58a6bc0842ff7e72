"""How many queries until BM25's in-process latency is steady: the JVM's JIT warm-up, side by side with
the served mode.

Usage: python lab/jvm_warmup_curve.py BUNDLE [--modes bm25 hybrid_fast] [--rounds 30] [--k 10]
       [--out lab/results/jvm_warmup_curve.json]

One process opens the bundle and builds the modes' searchers with serving's threads (1), as `uniret
bench` does, then runs `--rounds` rounds; in each, every mode searches SciFact's 300 test queries one
at a time (the bench's queries, in its order), timed. Per round and mode: p50 and mean latency, the
calls the mode had made before it, and the CPU the JVM's compiler threads spent during the round
(threads named `C2 CompilerThre`/`C1 CompilerThre` in /proc). The bench times 300 queries after
`bench.warmup_queries`; the round whose p50 stops moving is the warm-up a steady reading needs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from server_args import thread_cpu

from uniret.bench.machine import machine_info
from uniret.bench.runner import bench_config, bench_queries
from uniret.config.params import load_params
from uniret.retrieval.bundle import open_bundle
from uniret.retrieval.faiss_loader import set_search_threads
from uniret.retrieval.modes import build_searchers


def compiler_cpu() -> float:
    """CPU seconds of this process's JIT compiler threads so far."""
    return sum(cpu for (_, _, name), cpu in thread_cpu(os.getpid()).items() if "CompilerThre" in name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--modes", nargs="+", default=["bm25", "hybrid_fast"])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    set_search_threads(1)
    params = load_params(args.params, "cpu")
    queries, _ = bench_queries(args.data, bench_config(params))
    bundle = open_bundle(args.bundle, None, None, params.section("retrieval"))  # as the bench opens it
    searchers = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, bundle.has_gate, args.modes)
    calls = dict.fromkeys(args.modes, 0)
    rounds = []
    for r in range(args.rounds):
        row = {"round": r + 1}
        for mode in args.modes:
            searcher, before, jit = searchers[mode], calls[mode], compiler_cpu()
            times = []
            for qid, text in queries.items():
                start = time.perf_counter()
                searcher.search({qid: text}, args.k)
                times.append((time.perf_counter() - start) * 1000)
            calls[mode] += len(times)
            row[mode] = {"calls_before": before, "p50_ms": round(statistics.median(times), 4),
                         "mean_ms": round(statistics.fmean(times), 4), "jit_cpu_s": round(compiler_cpu() - jit, 3)}
        if "bm25" in args.modes:
            for mode in args.modes:
                row[mode]["p50_vs_bm25"] = round(row[mode]["p50_ms"] / row["bm25"]["p50_ms"], 3)
        rounds.append(row)
        print(json.dumps(row))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result = {"bundle": args.bundle.name, "k": args.k, "queries": len(queries), "machine": machine_info(),
                  "rounds": rounds}
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
