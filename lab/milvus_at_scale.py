"""Milvus Lite at corpus scale: a synthetic bundle exported and searched beside the in-process routes (E55).

    python lab/serve_at_scale.py build --docs 100000 --out .cache/scale/bundle-100k
    python lab/milvus_at_scale.py .cache/scale/bundle-100k [--queries 100] [--out lab/results/milvus_at_scale.json]

The bundle (serve_at_scale.py's synthetic one, or any) is exported into a fresh Milvus Lite file
(`uniret.milvus.bundles.export_bundle`: its seconds, the Milvus Lite server's RSS after it), then
`hybrid_fast` and its routes are searched through Milvus on the same real queries, batch 1, and the
Milvus Lite server is stopped before the bundle is opened in process and searched again (one engine
in memory at a time). Per mode: p50/p95 of each engine and the top-10 agreement of Milvus's run with
the in-process one; Lucene BM25's p50 beside them. Milvus Lite builds only FLAT dense indexes (it
refuses HNSW and IVF_PQ), so its dense route scans every vector where the in-process one uses IVF
from 100k documents (retrieval.pruning). Each run is appended to --out under its corpus size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import psutil

MODES = ("hybrid_fast", "lexical_static", "dense_feedback")


def _children_rss_mb() -> float:
    """The resident memory of this process's children (the Milvus Lite server a .db URI starts)."""
    return round(sum(p.memory_info().rss for p in psutil.Process().children(recursive=True)) / 2**20, 1)


def measure(args: argparse.Namespace) -> dict:
    """Export, search through Milvus, then in process (see the module doc); the figures of one size."""
    from uniret.bench.growth import time_search, top10_agreement
    from uniret.bench.machine import machine_info
    from uniret.bench.runner import bench_config, bench_queries
    from uniret.config import load_params
    from uniret.milvus.bundles import export_bundle, milvus_searchers
    from uniret.milvus.client import connect_configured
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.modes import build_searchers

    params = load_params(args.params, None)
    retrieval, cfg = params.section("retrieval"), params.section("milvus")
    queries = dict(list(bench_queries(Path(args.data), bench_config(params))[0].items())[: args.queries])
    bundle_dir = Path(args.bundle)
    docs = len(json.loads((bundle_dir / "docids.json").read_text()))
    out: dict = {"docs": docs, "queries": len(queries), "machine": machine_info(),
                 "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "milvus": {}, "in_process": {}}
    work = Path(tempfile.mkdtemp(prefix="milvus-at-scale-", dir=args.work))
    try:
        client = connect_configured(cfg, str(work / "lite.db"))
        start = time.perf_counter()
        exported = export_bundle(client, cfg, bundle_dir, progress=True)
        out["export_seconds"] = round(time.perf_counter() - start, 1)
        out["export"] = exported.summary()
        out["milvus_lite_rss_mb"] = _children_rss_mb()
        remote = milvus_searchers(client, cfg, bundle_dir, retrieval, modes=list(MODES))
        runs = {}
        for mode in MODES:
            out["milvus"][mode], runs[mode] = time_search(lambda q, s=remote[mode]: s.search(q, 10), queries,
                                                          args.warmup)
        out["milvus_lite_rss_mb_after_search"] = _children_rss_mb()
        client.close()  # the Lite server stops with its last client: one engine in memory at a time
        del remote
        bundle = open_bundle(bundle_dir, retrieval)
        local = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, bundle.has_gate,
                                [*MODES, "bm25"])
        out["in_process"]["bm25"], _ = time_search(lambda q: local["bm25"].search(q, 10), queries, args.warmup)
        for mode in MODES:
            out["in_process"][mode], run = time_search(lambda q, s=local[mode]: s.search(q, 10), queries, args.warmup)
            out["milvus"][mode]["top10_agreement_with_in_process"] = top10_agreement(runs[mode], run)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = out["in_process"]["bm25"]["p50_ms"]
    out["p50_vs_lucene_bm25"] = {f"{engine}/{mode}": round(out[engine][mode]["p50_ms"] / base, 3)
                                 for engine in ("milvus", "in_process") for mode in MODES}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", help="a bundle folder (serve_at_scale.py build writes a synthetic one)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=100, help="untimed queries per mode (Lucene JIT: E38)")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--work", default=None, help="folder for the Milvus Lite file (default: the system's temp)")
    parser.add_argument("--out", default="lab/results/milvus_at_scale.json")
    args = parser.parse_args()
    entry = measure(args)
    out = Path(args.out)
    done = json.loads(out.read_text()) if out.exists() else {"method": " ".join(__doc__.split("\n\n")[1].split()),
                                                             "runs": []}
    done["runs"].append(entry)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(done, indent=1))
    print(json.dumps({k: v for k, v in entry.items() if k != "machine"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
