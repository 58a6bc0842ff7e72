"""`uniret export milvus-parity`: every eval dataset searched in-process and through Milvus.

Per dataset, the index structures the evaluate stage searches (the bundle's own for its own
corpus, else the dataset's corpus encoded by the bundle, from the encodings cache, and the bm25
stage's index) are exported into a Milvus collection with an exact (FLAT) dense index, and every
mode's run over Milvus is compared with the in-process run on the dataset's test queries, encoded
once for both. Then both searcher sets are timed on the same queries of the bundle's own dataset,
one engine after the other in the same process (ratios hold on a shared machine).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from uniret.config.milvus import MilvusConfig
from uniret.config.params import Params
from uniret.config.retrieval import DenseIndexConfig

log = logging.getLogger("uniret.bench")

ROUTES = ("dense", "lexical", "bm25", "dense_static", "lexical_static")
FUSIONS = ("hybrid", "hybrid_bm25", "rrf", "hybrid_fast")
JSON_FILE, MD_FILE = "milvus_parity.json", "milvus_parity.md"


def run_parity(args, params: Params, cfg: MilvusConfig, bundle_dir: Path | None) -> dict[str, Any]:
    """Export, compare and time (see module doc); writes the report into args.out and returns it."""
    from uniret.bench.engine_parity import compare_modes
    from uniret.bench.machine import machine_info
    from uniret.evaluation.bundle_source import BUNDLE, DatasetIndexes
    from uniret.milvus.bundles import bundle_collection
    from uniret.milvus.client import connect_configured
    from uniret.milvus.native import NativeHybridSearcher
    from uniret.retrieval.base import encode_queries
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.modes import build_searchers
    from uniret.runtime import make_context

    ctx = make_context(args.params, args.profile, args.data, args.artifacts)
    retrieval = ctx.params.section("retrieval")
    bundle = open_bundle(bundle_dir or ctx.require("index") / BUNDLE, retrieval)
    serve_mode = (bundle.manifest.get("model") or {}).get("serve_mode")
    modes = [m for m in (*ROUTES, *FUSIONS, serve_mode) if m and m in retrieval.modes + [serve_mode]]
    modes = list(dict.fromkeys(modes))
    cfg = dataclasses.replace(cfg, dense_index="flat")  # the parity of the routes is exact search's
    _, identity = bundle_collection(cfg, bundle.path)
    client = connect_configured(cfg)
    indexes = DatasetIndexes(ctx, bundle)
    report: dict[str, Any] = {"uri": cfg.uri, "bundle": identity, "serve_mode": serve_mode, "depth": retrieval.k,
                              "datasets": {}, "exports": {}, "machine": machine_info()}
    timing = None
    try:
        for name in args.datasets or ctx.params.section("data").eval_datasets:
            dataset = ctx.dataset(name)
            index = indexes.index(name, dataset)
            exported, coll = _export(client, cfg, bundle, index, identity, name)
            report["exports"][name] = exported
            local = build_searchers(index, retrieval, bundle.encoder, bundle.bm25, bundle.has_gate, modes)
            remote = _remote(coll, index, bundle, retrieval, modes)
            for mode in [m for m in FUSIONS + (serve_mode,) if m in remote]:
                for ranker in ("rrf", "weighted"):
                    if getattr(remote[mode], "method", None) == "hybrid":
                        native = NativeHybridSearcher(remote[mode], coll, ranker, mode)
                        remote[native.mode] = native
                        local[native.mode] = local[mode]  # compared with uniret's own fusion of that mode
            queries = dict(list(dataset.split_queries("test").items())[:args.max_queries])
            batch = encode_queries(queries, bundle.encoder)
            compared = [m for m in remote if m in local]
            report["datasets"][name] = {"queries": len(queries), "modes": compare_modes(
                local, remote, batch, dataset.qrels("test"), compared, retrieval.k)}
            if timing is None and name == bundle.manifest["train_dataset"]:
                timing = ({m: s for m, s in local.items() if "_native_" not in m}, remote, queries)
        if timing is not None and args.latency_queries:
            report["speed"] = _speed(timing, serve_mode, args)
    finally:
        client.close()
    report["summary"] = summary(report)
    write_report(Path(args.out), report)
    return report


def _export(client, cfg, bundle, index, identity, name):
    """The dataset's structures in their own collection (idempotent), opened."""
    from uniret.milvus.export import Exporter, source_from_index
    from uniret.milvus.search import open_collection

    ident = {"bundle_hash": f"{identity['bundle_hash']}|{name}|{len(index.docids)}",
             "bundle_version": f"{identity['bundle_version']} on {name}"}
    collection = f"{cfg.collection_prefix}_parity_{hashlib.sha256(ident['bundle_hash'].encode()).hexdigest()[:16]}"
    exporter = Exporter(client, cfg)
    result = exporter.up_to_date(collection, ident)
    if result is None:
        source = source_from_index(index, DenseIndexConfig(type="flat"), bundle.bm25, ident)
        exported = exporter.export(collection, source).summary()
    else:
        exported = {"collection": collection, "changed": False, "num_docs": result["num_docs"]}
    dim = int(index.doc_vectors.shape[1]) if index.doc_vectors is not None else None
    quant = index.impacts.quant if index.impacts is not None else None
    coll = open_collection(client, cfg, collection, list(index.docids), {**ident, "dense_dim": dim,
                                                                          "sparse_quant": quant})
    return exported, coll


def _remote(coll, index, bundle, retrieval, modes):
    from uniret.milvus.search import milvus_corpus_index
    from uniret.retrieval.modes import build_searchers

    remote_index = milvus_corpus_index(coll, index, bundle.bm25)
    return build_searchers(remote_index, retrieval, bundle.encoder, bundle.bm25, bundle.has_gate, modes)


def _speed(timing, serve_mode, args) -> dict:
    from uniret.bench.engine_parity import speed

    local, remote, queries = timing
    timed = dict(list(queries.items())[:args.latency_queries])
    modes = [m for m in dict.fromkeys((serve_mode, "hybrid_fast", "dense", "lexical", "bm25")) if m in remote]
    modes += [m for m in remote if "_native_" in m and m.startswith(f"{serve_mode}_native")]
    return {"queries": len(timed), "clients": args.clients, "k": 10,
            "modes": speed({"in_process": local, "milvus": {m: remote[m] for m in modes}}, modes, timed, 10,
                           args.clients, 5)}


def summary(report: dict) -> dict:
    """Per dataset and mode: the share of queries with the same top 10, and the nDCG@10 gap."""
    out = {}
    for name, entry in report["datasets"].items():
        out[name] = {mode: (row.get("same_top10"), row.get("ndcg@10_diff")) for mode, row in entry["modes"].items()
                     if "skipped" not in row}
    return {"same_top10_and_ndcg_gap": out, "written": [JSON_FILE, MD_FILE]}


def write_report(out: Path, report: dict) -> None:
    """milvus_parity.json (everything) and milvus_parity.md (the tables)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / JSON_FILE).write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    lines = [f"# Milvus parity ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"Bundle {report['bundle']['bundle_version']} (content {report['bundle']['bundle_hash'][:12]}), "
             f"served mode {report['serve_mode']}, runs {report['depth']} deep; Milvus {report['uri']}.", "",
             "| dataset | mode | queries | same top 10 | same top-10 set | nDCG@10 in-process | nDCG@10 Milvus | "
             "max score diff (abs) |", "|---|---|---|---|---|---|---|---|"]
    for name, entry in report["datasets"].items():
        for mode, row in entry["modes"].items():
            if "skipped" in row:
                continue
            lines.append(f"| {name} | {mode} | {row['queries']} | {row['same_top10']:.4f} | {row['same_top10_set']:.4f} "
                         f"| {row['ndcg@10']} | {row['ndcg@10_milvus']} | {row['max_abs_score_diff']:.3g} |")
    if "speed" in report:
        speed = report["speed"]
        lines += ["", f"Speed on {speed['queries']} queries of the bundle's own dataset, top {speed['k']}: one "
                      "client with the query encoding included (the engines interleaved query by query), the same "
                      f"with queries encoded beforehand (search only), then {speed['clients']} concurrent clients "
                      "(threads), query encoding included. The machine was shared: compare rows of one mode.", "",
                  "| mode | engine | p50 ms | p95 ms | QPS 1 client | search-only p50 ms | search-only p95 ms | "
                  f"p50 ms {speed['clients']} clients | p95 ms {speed['clients']} clients | "
                  f"QPS {speed['clients']} clients |", "|---|---|---|---|---|---|---|---|---|---|"]
        for mode, engines in speed["modes"].items():
            for engine, row in engines.items():
                one, bare, many = row["1_client"], row["search_only"], row[f"{speed['clients']}_clients"]
                lines.append(f"| {mode} | {engine} | {one['p50_ms']} | {one['p95_ms']} | {one['qps']} | "
                             f"{bare['p50_ms']} | {bare['p95_ms']} | {many['p50_ms']} | {many['p95_ms']} | "
                             f"{many['qps']} |")
    (out / MD_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
