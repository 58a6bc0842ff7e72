"""`uniret bench`: every benchmark section in one run on the same queries, then bench.json/bench.md.

Sections: modes (latency/QPS/nDCG per retrieval mode, BM25 as reference), encoders (torch eager vs
ONNX Runtime: batch-1 query encoding, corpus docs/s), sizes (bytes per doc), top_n (sparsification
curve), growth (the served mode on synthetic 10k-1M corpora, uniret.bench.growth) and http (a real uvicorn on 127.0.0.1 at each concurrency level). A section that cannot run
(e.g. no torch checkpoint) is recorded with the reason instead of failing the whole run.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from itertools import islice
from pathlib import Path

from uniret.bench.machine import library_versions, machine_info
from uniret.bench.report import JSON_FILE, targets, write_results
from uniret.config.params import Params
from uniret.config.serving import BenchConfig
from uniret.utils.files import shown_path

log = logging.getLogger("uniret.bench")

SECTIONS = ("modes", "encoders", "sizes", "top_n", "http", "growth")


def bench_config(params: Params) -> BenchConfig:
    """The `bench` section with its `dataset` (null: the train dataset, data.train_dataset) resolved."""
    cfg: BenchConfig = params.section("bench")
    return cfg if cfg.dataset else dataclasses.replace(cfg, dataset=params.section("data").train_dataset)


def bench_queries(data_root: Path, cfg: BenchConfig) -> tuple[dict[str, str], dict]:
    """The benchmark queries (first `max_queries` of the split, file order) and their qrels."""
    from uniret.data.roots import open_dataset

    dataset = open_dataset(data_root, cfg.dataset)
    queries = dataset.split_queries(cfg.split)
    if cfg.max_queries is not None:
        queries = dict(islice(queries.items(), cfg.max_queries))
    if not queries:
        raise ValueError(f"{dataset.root}: no queries in split {cfg.split!r}")
    return queries, dataset.qrels(cfg.split)


def _encoders_section(bundle, cfg: BenchConfig, batch_size: int, queries: dict[str, str], data_root: Path,
                      checkpoint: Path | None, serving_only: bool = False) -> dict:
    """Query (batch 1) and corpus encoding per encoder; `serving_only`: the ONNX query encoder alone."""
    from uniret.bench.encoders import corpus_encoding, load_torch_encoder, onnx_encoder, query_encoding
    from uniret.data.roots import open_dataset

    qlen, dlen = bundle.manifest["query_max_length"], bundle.manifest["doc_max_length"]
    encoders = {"onnx": onnx_encoder(bundle.path, bundle.encoder.tokenizer, batch_size, qlen, dlen,
                                     cfg.threads)}
    out: dict = {}
    ckpt = checkpoint or Path(bundle.manifest.get("model", {}).get("checkpoint") or "")
    if serving_only:
        picked = dict(islice(queries.items(), cfg.encode_queries))
        return {"query_batch1": query_encoding(encoders, picked, cfg.warmup_queries), "threads": cfg.threads,
                "torch_skipped": "serving encoder only (bench stage)"}
    if checkpoint is None and not str(ckpt):
        out["torch_skipped"] = "the bundle manifest names no checkpoint; pass --checkpoint"
    elif not (ckpt / "uniret_model.json").is_file():
        out["torch_skipped"] = f"{ckpt}: torch checkpoint not found; pass --checkpoint"
    else:
        torch_enc = load_torch_encoder(ckpt, batch_size, qlen, dlen, cfg.threads)
        encoders = {"torch": torch_enc, **encoders}
    if "torch_skipped" in out:
        log.warning("encoders: %s (ONNX figures only)", out["torch_skipped"])
    dataset = open_dataset(data_root, bundle.manifest.get("train_dataset") or cfg.dataset)
    docs = [d.contents for d in islice(dataset.iter_corpus(), cfg.encode_docs)]
    picked = dict(islice(queries.items(), cfg.encode_queries))
    out["query_batch1"] = query_encoding(encoders, picked, cfg.warmup_queries)
    out["corpus"] = corpus_encoding(encoders, docs)
    out["threads"] = cfg.threads
    return out


def _guard(result: dict, name: str, skip: set[str], fn, *args) -> None:
    """Run one section into result[name]; a failure is recorded (with its reason) rather than
    losing the other sections. Its duration goes to result["section_seconds"][name]."""
    if name in skip:
        result[name] = {"skipped": "--skip on the command line"}
        return
    start = time.perf_counter()
    try:
        result[name] = fn(*args)
    except Exception as exc:  # noqa: BLE001 - keep the other sections' figures
        log.exception("bench section %s failed", name)
        result[name] = {"skipped": f"failed: {type(exc).__name__}: {exc}"}
    result.setdefault("section_seconds", {})[name] = round(time.perf_counter() - start, 2)


def run_bench(params: Params, bundle_dir: Path, data_root: Path, out_dir: Path, checkpoint: Path | None = None,
              skip: set[str] | None = None, cfg: BenchConfig | None = None, serving_only: bool = False) -> dict:
    """Run every section on `bundle_dir`; write bench.json and bench.md into `out_dir`; return the result.

    `cfg` defaults to params `bench`; `serving_only` times only the encoder serving runs (ONNX
    queries), as the DAG's bench stage does.
    """
    from uniret.bench.http_bench import http_latency
    from uniret.bench.modes import bench_modes, warm_jvm
    from uniret.bench.sizes import index_sizes
    from uniret.bench.sparsify import top_n_curve
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.modes import build_searchers
    from uniret.serving.source import bundle_version

    cfg = cfg or bench_config(params)
    skip = set(skip or ())
    faiss_threads = params.section("serve").faiss_threads
    if faiss_threads is not None:  # in-process modes are timed with the threads serving uses
        from uniret.retrieval.faiss_loader import set_search_threads

        set_search_threads(faiss_threads)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    start = time.perf_counter()
    queries, qrels = bench_queries(data_root, cfg)
    bundle = open_bundle(bundle_dir, None, cfg.threads, params.section("retrieval"))
    searchers = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, bundle.has_gate)
    project = Path(params.path).parent if params.path else Path.cwd()  # results are committed: paths relative
    result: dict = {
        "started_at": started,
        "machine": machine_info(),
        "versions": library_versions(),
        "bundle": {"path": shown_path(bundle_dir, project), "version": bundle_version(bundle_dir), "docs": len(bundle.index.docids)},
        "queries": {"dataset": cfg.dataset, "split": cfg.split, "count": len(queries)},
        "config": {"k": cfg.k, "eval_k": cfg.eval_k, "threads": cfg.threads, "profile": params.profile,
                   "uni_k": bundle.retrieval.uni.k, "lexical": bundle.index.provenance.get("lexical")},
    }
    if "modes" not in skip and cfg.jvm_warmup_queries and "bm25" in searchers:
        result["config"]["jvm_warmup"] = warm_jvm(searchers["bm25"], queries, cfg.jvm_warmup_queries, cfg.k)
        log.info("bench: JVM warmed by %s", result["config"]["jvm_warmup"])
    _guard(result, "modes", skip, bench_modes, searchers, cfg.modes, queries, qrels, cfg.k, cfg.eval_k,
           cfg.warmup_queries)
    from uniret.lexical.jvm import helpers_loaded

    # BM25's top k is read through uniret.TopDocsArrays only where a javac compiled it (much faster)
    result["config"]["java_helpers"] = helpers_loaded()
    _guard(result, "encoders", skip, _encoders_section, bundle, cfg, params.section("encoding").batch_size, queries, data_root, checkpoint, serving_only)
    _guard(result, "sizes", skip, index_sizes, bundle_dir)
    _guard(result, "top_n", skip, top_n_curve, bundle, queries, qrels, cfg.top_n, cfg.k, cfg.eval_k,
           cfg.warmup_queries, cfg.threads)
    _guard(result, "growth", skip, run_growth, params, bundle, queries, cfg, out_dir, data_root)
    _guard(result, "http", skip, http_latency, bundle_dir, params.path, params.profile, list(queries.values()),
           cfg.http, params.section("serve").workers)
    parts = result["sizes"].get("parts", {})  # sizes may have failed: then no top-level byte figures
    for kind, part in (("dense", "dense.faiss"), ("sparse", "impact")):
        if part in parts:  # top-level keys the promotion gate reads (registry.gate.budget_checks)
            result[f"bytes_per_doc_{kind}"] = parts[part]["bytes_per_doc"]
    result["targets"] = targets(result, cfg.targets)
    result["seconds"] = round(time.perf_counter() - start, 1)
    write_results(result, out_dir)
    return result


def run_growth(params: Params, bundle, queries: dict[str, str], cfg: BenchConfig, out_dir: Path,
               data_root: Path) -> dict:
    """The growth curve (uniret.bench.growth) -> growth.{json,md,png} in `out_dir`; returns it."""
    from uniret.bench.growth import growth_curve
    from uniret.bench.report import write_growth

    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    start = time.perf_counter()
    growth = growth_curve(bundle, queries, cfg.growth, out_dir, data_root, params.section("retrieval").pruning,
                          cfg.jvm_warmup_queries)
    growth.update(started_at=started, seconds=round(time.perf_counter() - start, 1), machine=machine_info(),
                  versions=library_versions(), dataset=cfg.dataset)
    write_growth(growth, out_dir)
    return growth


def default_bundle(params: Params, artifacts: str | None) -> Path:
    """artifacts/index/bundle when it exists, else the registry's production bundle."""
    import os

    from uniret.serving.source import BundleSource

    art = Path(artifacts or os.environ.get("UNIRET_ARTIFACTS") or "artifacts")
    if (art / "index" / "bundle" / "manifest.json").is_file():
        return art / "index" / "bundle"
    from uniret.registry.configured import registry_root

    found = BundleSource(registry_root=registry_root(params)).production()
    if found is None:
        raise FileNotFoundError(f"{art / 'index' / 'bundle'}: no bundle; run `uniret index` or pass --bundle")
    return found[0]


def _replace_growth(out_dir: Path, growth: dict) -> None:
    """A full run's bench.json and bench.md in `out_dir`, if any, with this growth section in place of theirs
    (their other sections stay as measured), so neither points at an older curve than growth.md."""
    import json

    path = out_dir / JSON_FILE
    if path.is_file():
        result = json.loads(path.read_text())
        result["growth"] = growth
        write_results(result, out_dir)
        print(f"bench growth: the growth section of {path} and bench.md replaced")


def run_from_args(args: argparse.Namespace) -> int:
    """CLI entry of `uniret bench`."""
    from uniret.config import load_params
    from uniret.config.paths import resolve_path
    from uniret.data.roots import resolve_data_root
    from uniret.serving.source import BundleSource
    from uniret.utils.owned import check_output_folder

    params = load_params(args.params, args.profile)
    cfg = bench_config(params)
    if args.bundle:
        bundle = Path(args.bundle)
    elif args.registry:
        found = BundleSource(registry_root=Path(args.registry)).production()
        if found is None:
            raise FileNotFoundError(f"{args.registry}/production.json: no production bundle")
        bundle = found[0]
    else:
        bundle = default_bundle(params, args.artifacts)
    data_root = resolve_data_root(args.data, params.section("data").root)
    out_dir = check_output_folder(Path(args.out) if args.out else resolve_path(params, cfg.out_dir),
                                  data_roots=(data_root,))
    from uniret.registry.configured import registry_root
    from uniret.registry.integrity import verified_bundle

    # a bundle that fails its checksums is not measured (its figures would describe other files)
    verified_bundle(bundle, Path(args.registry) if args.registry else registry_root(params), "not measured")
    if args.only == "growth":
        from uniret.retrieval.bundle import open_bundle

        opened = open_bundle(bundle.resolve(), None, cfg.threads, params.section("retrieval"))
        growth = run_growth(params, opened, bench_queries(data_root, cfg)[0], cfg, out_dir, data_root)
        print(f"bench growth: {out_dir / 'growth.json'}, growth.md and {growth['plot']} written in {growth['seconds']} s")
        _replace_growth(out_dir, growth)
        return 0
    result = run_bench(params, bundle.resolve(), data_root, out_dir,
                       Path(args.checkpoint) if args.checkpoint else None, set(args.skip))
    print(f"bench: {out_dir / 'bench.json'} and bench.md written in {result['seconds']} s")
    for t in result["targets"]:
        print(f"  {t['target']}: {t['measured']} (target {t['bound']}, met: {t['met']})")
    return 0
