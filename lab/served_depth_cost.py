"""What depth costs the served mode (issue 58): hybrid_fast and Lucene BM25 at k = 10, 100 and 1,000,
timed query by query on one bundle, the two searches alternating so the machine's drift falls on
both alike (`uniret.bench.modes.time_side_by_side`).

Usage: python lab/served_depth_cost.py BUNDLE [--dataset scifact] [--queries 300] [--rounds 3]
       [--ks 10 100 1000] [--out lab/results/served_depth_cost.json]

Beyond its cut (retrieval.fusion.fast_depth) hybrid_fast takes its routes to k and continues the
cut's fused list with the fusion of those deeper runs (`uniret.retrieval.fusion.extend_below`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from uniret.bench.machine import machine_info
from uniret.bench.modes import side_by_side_figures, time_side_by_side
from uniret.data.beir import BeirDataset
from uniret.retrieval.bundle import open_bundle
from uniret.retrieval.modes import build_searchers
from uniret.utils.files import atomic_write_json


def measure(bundle_dir: Path, queries: dict[str, str], ks: list[int], rounds: int, warmup: int) -> dict:
    """Per k: hybrid_fast's and BM25's p50/p95 side by side, and their ratio."""
    bundle = open_bundle(bundle_dir, None, 1)
    searchers = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, bundle.has_gate)
    out = {}
    for k in ks:
        seconds = time_side_by_side({mode: (lambda q, s=searchers[mode], k=k: s.search(q, k))
                                     for mode in ("bm25", "hybrid_fast")}, queries, warmup, rounds)
        figures = side_by_side_figures(seconds, rounds, "bm25")
        lengths = [len(searchers["hybrid_fast"].search({qid: text}, k)[qid]) for qid, text in list(queries.items())[:20]]
        out[str(k)] = {**figures, "hybrid_fast_returned_min": min(lengths)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--data", default=os.environ.get("UNIRET_DATA", "../shared/data"))
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--out", type=Path, default=Path("lab/results/served_depth_cost.json"))
    args = parser.parse_args(argv)
    queries = dict(list(BeirDataset(Path(args.data) / args.dataset).split_queries("test").items())[: args.queries])
    result = {"bundle": str(args.bundle), "dataset": args.dataset, "queries": len(queries), "rounds": args.rounds,
              "machine": machine_info(), "load_average": os.getloadavg(),
              "per_k": measure(args.bundle, queries, args.ks, args.rounds, args.warmup)}
    atomic_write_json(args.out, result)
    for k, row in result["per_k"].items():
        print(f"k={k:>5}: hybrid_fast p50 {row['hybrid_fast']['p50_ms']} ms, bm25 {row['bm25']['p50_ms']} ms, "
              f"ratio {row['hybrid_fast']['p50_vs_bm25']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
