"""Where hybrid_fast's query time goes (E38): each route of the fast path timed alone, and the whole
fusion with its Lucene route run serially or beside the in-process routes, on one bundle.

Usage: python lab/fast_path_latency.py BUNDLE [--data ../shared/data] [--dataset scifact]
       [--split test] [--max-queries 300] [--rounds 3] [--out lab/results/fast_path_latency.json]

Each query is searched alone (batch 1, as serving does), vector searches on one thread (as serving
runs them). The paths alternate query by query in
every round, so load on the machine hits them alike; the result records the load average.
`hybrid_fast` and `hybrid_fast_serial` are checked to return identical runs first. `--blocks N`
then times bm25@10 and hybrid_fast the way `uniret bench` does, every query of one path before the
next, N passes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--blocks", type=int, default=0,
                        help="also time bm25@10 and hybrid_fast as blocks of every query, this many passes each")
    parser.add_argument("--out", default="lab/results/fast_path_latency.json")
    args = parser.parse_args()

    from uniret.bench.machine import machine_info
    from uniret.bench.stats import latency_summary
    from uniret.data.beir import BeirDataset
    from uniret.retrieval import fusion
    from uniret.retrieval.base import QueryBatch
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.faiss_loader import faiss, set_search_threads
    from uniret.retrieval.modes import build_searchers

    set_search_threads(1)  # as serving and the bench run vector searches (serve.faiss_threads)
    bundle = open_bundle(args.bundle)
    cfg = bundle.retrieval
    depth = cfg.fusion.fast_depth
    searchers = build_searchers(bundle.index, cfg, bundle.encoder, bundle.bm25,
                                modes=["bm25", "dense_static", "lexical_static", "hybrid_fast"])
    fast = searchers["hybrid_fast"]
    static = bundle.index.static_query
    queries = list(BeirDataset(Path(args.data) / args.dataset, args.dataset).split_queries(args.split).items())
    queries = queries[:args.max_queries]

    class Serial(fusion.FusionSearcher):
        """The fusion as before E38: every route in turn on the calling thread."""

        def _route_arrays(self, batch, depths):
            return [s.search_arrays(batch, d) for s, d in zip(self.searchers, depths, strict=True)]

    fast_serial = Serial(fast.searchers, "hybrid", fast.depths, weights=fast.weights, fixed_depths=True)
    paths = {
        "bm25@10": lambda q: searchers["bm25"].search(q, 10),
        f"bm25@{depth}": lambda q: searchers["bm25"].search(q, depth),
        "static_encode": lambda q: static.encode(list(q.values())),
        f"dense_static@{depth}": lambda q: searchers["dense_static"].search_arrays(QueryBatch.from_dict(q), depth),
        f"lexical_static@{depth}": lambda q: searchers["lexical_static"].search_arrays(QueryBatch.from_dict(q), depth),
        "hybrid_fast": lambda q: fast.search(q, 10),
        "hybrid_fast_serial": lambda q: fast_serial.search(q, 10),
    }
    for qid, text in queries:  # warm every path; the two fusions must agree
        assert paths["hybrid_fast"]({qid: text}) == paths["hybrid_fast_serial"]({qid: text}), qid
        for path in paths.values():
            path({qid: text})
    times: dict[str, list[float]] = {name: [] for name in paths}
    load_before = os.getloadavg()[0]
    for _ in range(args.rounds):
        for qid, text in queries:
            for name, path in paths.items():
                start = time.perf_counter()
                path({qid: text})
                times[name].append(time.perf_counter() - start)
    summary = {name: latency_summary(v) for name, v in times.items()}
    base = summary["bm25@10"]["p50_ms"]
    # block timing, as `uniret bench` times modes: every query of one path, then the next path
    blocks = []
    for _ in range(args.blocks):
        row = {}
        for name in ("bm25@10", "hybrid_fast"):
            series = []
            for qid, text in queries:
                start = time.perf_counter()
                paths[name]({qid: text})
                series.append(time.perf_counter() - start)
            row[name] = latency_summary(series)["p50_ms"]
        blocks.append(row)
    result = {
        "bundle": str(args.bundle), "queries": len(queries), "rounds": args.rounds, "fast_depth": depth,
        "machine": machine_info(), "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "faiss_threads": faiss.omp_get_max_threads(),
        "blocks_p50_ms": blocks,
        "paths": {name: {"p50_ms": row["p50_ms"], "p95_ms": row["p95_ms"], "p50_vs_bm25@10": round(row["p50_ms"] / base, 2)}
                  for name, row in summary.items()},
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for i, row in enumerate(blocks, start=1):
        print(f"block pass {i}: " + ", ".join(f"{k} p50 {v} ms" for k, v in row.items()))
    for name, row in result["paths"].items():
        print(f"{name:24s} p50 {row['p50_ms']:7.3f} ms  p95 {row['p95_ms']:7.3f}  x bm25@10 {row['p50_vs_bm25@10']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
