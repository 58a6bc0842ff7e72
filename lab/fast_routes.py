"""hybrid_fast's routes with no Java search and a dense shortlist (E43): dev quality and latency of
each setting of `retrieval.fusion.fast_bm25` and `fast_shortlist`, on an index stage's bundle.

Usage: python lab/fast_routes.py [--params params.yaml] [--profile cpu] [--artifacts artifacts]
       [--max-queries 300] [--rounds 2] [--settings NAME ...] [--out lab/results/fast_routes.json]

Quality: nDCG@10 of hybrid_fast with the bundle's learned weights on the dev sets the index stage
learns them on (the SciFact dev carve: the bm25 stage's dev_qrels.tsv; NFCorpus dev, searched as
the evaluate stage searches a corpus other than the bundle's: cached encodings, its own BM25 index
and IDF table, the zero-shot weights). Never reads a test split.

Latency: batch-1 searches of the bundle's corpus (the dev-carve queries), one vector-search thread
as serving runs them; every setting and BM25's top 10 (the Lucene reference) alternate query by
query in each round, so the machine's drift hits them alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

from dag_args import add_dag_args, dag_context

SETTINGS = {  # name: (fast_bm25, fast_shortlist, compiled kernels[, fast_depth[, fast_runs]])
    "lucene_exact": ("lucene", 0, False),  # hybrid_fast before E43
    "memory_exact": ("memory", 0, False),
    "lucene_shortlist2": ("lucene", 2, False),
    "memory_shortlist1.5": ("memory", 1.5, False),
    "memory_shortlist2": ("memory", 2, False),  # E43's default
    "memory_shortlist3": ("memory", 3, False),
    "e43_default": ("memory", 2, False, 300),  # hybrid_fast before E44
    "numba_shortlist2": ("memory", 2, True),  # E44: the routes' inner loops compiled
    "numba_shortlist1.5": ("memory", 1.5, True),
    "numba_shortlist1": ("memory", 1, True),
    "numba_shortlist1.5_depth200": ("memory", 1.5, True, 200),
    "numba_shortlist1.5_depth150": ("memory", 1.5, True, 150),
    "numba_shortlist1.5_depth100": ("memory", 1.5, True, 100),
    # E46: the dense route with and without BM25's feedback (latency only: the bundle's weights were
    # learned for one of them; dev quality of both is lab/dense_feedback.py's)
    "e44_static": ("memory", 1.5, True, 150, ["bm25", "lexical_static", "dense_static"]),
    "e46_feedback": ("memory", 1.5, True, 150, ["bm25", "lexical_static", "dense_feedback"]),
    # E51: the dense route's shortlist against its exact form (what Milvus's FLAT index returns)
    "e51_shortlist3": ("memory", 3, True, 150, ["bm25", "lexical_static", "dense_feedback"]),
    "e51_shortlist6": ("memory", 6, True, 150, ["bm25", "lexical_static", "dense_feedback"]),
    "e51_exact": ("memory", 0, True, 150, ["bm25", "lexical_static", "dense_feedback"]),
}


EXACT = "e51_exact"


def _with(cfg, bm25: str, shortlist: float, depth: int | None = None, runs: list[str] | None = None):
    return dataclasses.replace(cfg, fusion=dataclasses.replace(cfg.fusion, fast_bm25=bm25, fast_shortlist=shortlist,
                                                               fast_depth=depth or cfg.fusion.fast_depth,
                                                               fast_runs=runs or cfg.fusion.fast_runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dag_args(parser)
    parser.add_argument("--max-queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--settings", nargs="+", choices=sorted(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--out", default="lab/results/fast_routes.json")
    args = parser.parse_args()
    settings = {name: SETTINGS[name] for name in args.settings}

    from uniret.bench.engine_parity import agreement
    from uniret.bench.machine import machine_info
    from uniret.bench.stats import latency_summary
    from uniret.core.stage_files import DEV_QRELS
    from uniret.data.beir import read_qrels
    from uniret.evaluation.bundle_source import DatasetIndexes
    from uniret.evaluation.metrics import evaluate_run
    from uniret.retrieval import kernels
    from uniret.retrieval.base import QueryBatch
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.faiss_loader import set_search_threads
    from uniret.retrieval.modes import build_searchers

    ctx = dag_context(args)
    data = ctx.params.section("data")
    bundle = open_bundle(ctx.stage_dir("index") / "bundle")
    indexes = DatasetIndexes(ctx, bundle)
    carve = read_qrels(ctx.stage_dir("bm25") / DEV_QRELS)
    train = ctx.dataset(data.train_dataset)
    dev_sets = [(data.train_dataset, train, {q: t for q, t in train.split_queries(data.train_split).items() if q in carve},
                 carve)]
    for name in data.dev.datasets:
        other = ctx.dataset(name)
        dev_sets.append((f"{name}/{data.dev.split}", other, other.split_queries(data.dev.split), other.qrels(data.dev.split)))

    quality: dict[str, dict[str, float]] = {}
    runs: dict[str, dict[str, dict]] = {}  # {dev set: {setting: top-10 run}}
    searchers: dict[str, object] = {}
    for set_name, dataset, queries, qrels in dev_sets:
        index = indexes.index(dataset.name, dataset)
        batch = QueryBatch.from_dict(queries)
        for name, (bm25, shortlist, compiled, *depth) in settings.items():
            found = build_searchers(index, _with(bundle.retrieval, bm25, shortlist, *depth), None, bundle.bm25,
                                    modes=["hybrid_fast"])["hybrid_fast"]
            kernels.AVAILABLE = compiled
            run = found.search_batch(batch, 10)
            quality.setdefault(name, {})[set_name] = round(evaluate_run(qrels, run, ["ndcg@10"], True)[1]["ndcg@10"], 5)
            runs.setdefault(set_name, {})[name] = run
            if set_name == data.train_dataset:
                searchers[name] = found
        print(set_name, {n: q[set_name] for n, q in quality.items()}, flush=True)
    for row in quality.values():
        row["mean"] = round(sum(row.values()) / len(row), 5)
    # E51: each setting's top 10 against the exact dense route's (Milvus's FLAT search), query by query
    same_as_exact = {name: {set_name: agreement(by[EXACT], by[name], 10)["same_top10"] for set_name, by in runs.items()}
                     for name in settings} if EXACT in settings else {}

    set_search_threads(1)  # as serving runs vector searches (serve.faiss_threads)
    bm25 = build_searchers(bundle.index, bundle.retrieval, None, bundle.bm25, modes=["bm25"])["bm25"]
    def timed_path(searcher, compiled):
        def run(batch):
            kernels.AVAILABLE = compiled
            return searcher.search_batch(batch, 10)

        return run

    paths = {"bm25@10": lambda b: bm25.search_batch(b, 10),
             **{name: timed_path(s, settings[name][2]) for name, s in searchers.items()}}
    queries = list(dev_sets[0][2].items())[:args.max_queries]
    for qid, text in queries:  # warm every path (Lucene's JIT)
        for path in paths.values():
            path(QueryBatch([qid], [text]))
    times: dict[str, list[float]] = {name: [] for name in paths}
    load_before = os.getloadavg()[0]
    for _ in range(args.rounds):
        for qid, text in queries:
            for name, path in paths.items():
                batch = QueryBatch([qid], [text])
                start = time.perf_counter()
                path(batch)
                times[name].append(time.perf_counter() - start)
    summary = {name: latency_summary(v) for name, v in times.items()}
    base = summary["bm25@10"]["p50_ms"]
    result = {
        "bundle": "<artifacts>/index/bundle", "checkpoint_sha256": bundle.manifest["model"].get("checkpoint_sha256"),
        "settings": {n: {"fast_bm25": b, "fast_shortlist": s, "compiled": c, "fast_depth": (d or [bundle.retrieval.fusion.fast_depth])[0],
                         "fast_runs": d[1] if len(d) > 1 else bundle.retrieval.fusion.fast_runs}
                     for n, (b, s, c, *d) in settings.items()},
        "dev_ndcg@10": quality, "dev_same_top10_as_exact": same_as_exact, "latency_queries": len(queries), "rounds": args.rounds,
        "machine": machine_info(), "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "latency": {name: {"p50_ms": row["p50_ms"], "p95_ms": row["p95_ms"], "p50_vs_bm25@10": round(row["p50_ms"] / base, 2)}
                    for name, row in summary.items()},
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name, row in result["latency"].items():
        print(f"{name:22s} dev {quality.get(name, {}).get('mean', ''):>8}  p50 {row['p50_ms']:7.3f} ms  "
              f"p95 {row['p95_ms']:7.3f}  x bm25@10 {row['p50_vs_bm25@10']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
