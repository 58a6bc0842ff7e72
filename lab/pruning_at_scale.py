"""Seismic over the served mode's sparse routes at a million documents, beside the cut lists (E53).

    python lab/pruning_at_scale.py [--docs 1000000] [--postings 3500,1500] [--out lab/results/pruning_at_scale.json]

A synthetic corpus as `uniret bench --only growth` makes it (uniret.bench.growth: the production
bundle's documents copied, Lucene BM25 over the texts, its term weights read back, the impacts in
memory). The 100 growth queries run once through `hybrid_fast` with every posting summed, and each
sparse route's query (its terms and weights, as the route hands them to its posting lists) is kept.
Per route (the BM25 weights, the impacts): a Seismic index (pyseismic-lsr, Bruch et al. 2024: each
posting list cut to its largest weights, clustered into blocks with summary vectors, a block skipped
when its summary's score falls below the heap's) of the documents' rows at each `n_postings`; each
query searched to the route's depth at each (query_cut, heap_factor), its hits scored exactly from the
rows (kernels.rescore_rows_top_k, as the cut lists do) and their top 10 compared with the exhaustive
route's. The exhaustive sum and the cut lists of retrieval.pruning are timed in the same run. Dense:
the feedback query vectors the dense route was handed, searched by scanning every vector (the
reference), through an IVF-Flat index (E52's form: the probed lists' vectors scored exactly) and
through the IVF index of 4-bit PQ codes whose candidates are scored exactly from the flat vectors
(retrieval.pruning's form since E53), at several nprobe and candidate counts; the same lists (corpus /
ivf_points_per_list, k-means on the same sample). Batch 1, one thread; the JVM's analysis and the
static encoding are not in these times (the same for every form).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from pathlib import Path

import numpy as np

PROBES = ((16, 4), (32, 4), (32, 8), (64, 8))  # (nprobe, candidates x depth) of the PQ-code shortlist
SEARCHES = ((99, 1.0), (10, 1.0), (10, 0.8), (10, 1.2), (6, 1.0))  # (query_cut, heap_factor); 99: every term


class _Recorder:
    """Posting lists that keep each query's (terms, weights, k, scale, round32) as they search."""

    def __init__(self, postings):
        self.postings, self.calls = postings, []

    def top_k(self, terms, weights, k, ties, scale=1.0, round32=False):
        order = np.argsort(terms, kind="stable")
        self.calls.append((np.asarray(terms, dtype=np.int64)[order], np.asarray(weights, dtype=np.float64)[order],
                           k, scale, round32))
        return self.postings.top_k(terms, weights, k, ties, scale, round32)


def _timed(search, calls) -> tuple[list[float], list[np.ndarray]]:
    seconds, found = [], []
    for call in calls:
        start = time.perf_counter()
        found.append(search(*call))
        seconds.append(time.perf_counter() - start)
    return seconds, found


def _summary(seconds, found, exact) -> dict:
    shares = [len(set(f[:10].tolist()) & set(e[:10].tolist())) / max(1, min(10, len(e))) for f, e in zip(found, exact, strict=True)]
    return {"p50_ms": round(float(np.median(seconds)) * 1e3, 3), "p95_ms": round(float(np.percentile(seconds, 95)) * 1e3, 3),
            "top10_agreement": round(float(np.mean(shares)), 4), "min_agreement": round(float(np.min(shares)), 2)}


def _route(name: str, weights, ties, calls, full, pruning, postings_grid) -> dict:
    import seismic

    from uniret.retrieval import kernels
    from uniret.retrieval.postings import pruned_postings

    n = weights.shape[0]
    weights = weights.tocsr().astype(np.float32)
    weights.sort_indices()
    fwd = (weights.indptr.astype(np.int64), weights.indices.astype(np.int32), weights.data)
    seconds, exact = _timed(lambda t, w, k, s, r: full.top_k(t, w, k, ties, s, r)[0], calls)
    out = {"route": name, "docs": n, "postings_per_doc": round(weights.nnz / n, 1),
           "query_terms_p50": float(np.median([len(c[0]) for c in calls])), "exhaustive": _summary(seconds, exact, exact)}
    cut = pruned_postings(weights, pruning.posting_keep(n), pruning.candidates(n))
    out["cut_lists"] = _summary(*_timed(lambda t, w, k, s, r: cut.top_k(t, w, k, ties, s, r)[0], calls), exact)
    cut = None  # freed before the Seismic builds
    out["seismic"] = []
    text = seismic.get_seismic_string()
    for n_postings in postings_grid:
        start = time.perf_counter()
        data = seismic.SeismicDataset()
        data.add_documents_by_id([str(i) for i in range(n)], weights.indices.astype(np.int64), weights.data,
                                 weights.indptr.astype(np.int64))
        index = seismic.SeismicIndex.build_from_dataset(data, n_postings=n_postings, num_threads=2)
        del data
        built = round(time.perf_counter() - start, 1)
        for query_cut, heap_factor in SEARCHES:
            def search(terms, w, k, scale, round32, qc=query_cut, hf=heap_factor, idx=index):
                hits = idx.search("q", np.array([str(t) for t in terms], dtype=text), w.astype(np.float32), k=k,
                                    query_cut=min(qc, len(terms)), heap_factor=hf)
                rows = np.sort(np.fromiter((int(h[2]) for h in hits), dtype=np.int64, count=len(hits)))
                return kernels.rescore_rows_top_k(*fwd, rows, terms, w, k, ties, scale, round32)[0]

            entry = {"n_postings": n_postings, "build_s": built, "query_cut": query_cut, "heap_factor": heap_factor}
            entry.update(_summary(*_timed(search, calls), exact))
            out["seismic"].append(entry)
            print(name, entry, flush=True)
        index = None  # freed before the next build
    return out


def _dense(vectors, queries: np.ndarray, depth: int, pruning) -> dict:
    """The dense route's forms over `vectors` for the recorded feedback `queries` (see the module doc)."""
    from uniret.retrieval.base import top_k_rows
    from uniret.retrieval.dense import build_ivf_shortlist, shortlisted
    from uniret.retrieval.faiss_loader import faiss

    n, dim = vectors.shape
    calls = [(q[None],) for q in queries]
    seconds, exact = _timed(lambda q: top_k_rows(q @ vectors.T, depth)[0][0], calls)
    out = {"docs": n, "scan": _summary(seconds, exact, exact)}
    start = time.perf_counter()
    nlist = max(1, n // pruning.ivf_points_per_list)
    flat = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    sample = np.random.default_rng(pruning.seed).choice(n, size=min(n, nlist * pruning.ivf_train_points), replace=False)
    flat.train(vectors[np.sort(sample)])
    flat.add(vectors)
    out["ivf_flat"] = {"build_s": round(time.perf_counter() - start, 1), "nlist": nlist, "bytes_per_doc": round(
        (n * (dim * 4 + 8) + nlist * dim * 4) / n, 1), "nprobe": {}}
    for nprobe in (16, 64):
        flat.nprobe = nprobe
        out["ivf_flat"]["nprobe"][nprobe] = _summary(*_timed(lambda q: flat.search(q, depth)[1][0], calls), exact)
    flat = None  # freed before the codes are built
    start = time.perf_counter()
    codes = build_ivf_shortlist(vectors, pruning.ivf_points_per_list, pruning.ivf_nprobe, pruning.ivf_train_points,
                                pruning.seed)
    out["ivf_pq_codes"] = {"build_s": round(time.perf_counter() - start, 1), "nlist": codes.nlist, "bytes_per_doc": round(
        (n * (codes.code_size + 8) + codes.nlist * dim * 4) / n, 1), "probes": []}
    for nprobe, times in PROBES:
        codes.nprobe = nprobe
        entry = {"nprobe": nprobe, "candidates": times * depth}
        entry.update(_summary(*_timed(lambda q, c=times * depth: shortlisted(codes, vectors, q, depth, c)[1][0], calls), exact))
        out["ivf_pq_codes"]["probes"].append(entry)
        print("dense", entry, flush=True)
    return out


def growth_setup():
    """(production bundle, the growth bench's queries, the real corpus its synthetic corpora copy, the bench
    params) as `uniret bench --only growth` makes them (the cpu profile, registry/): once for every size."""
    from uniret.bench.growth import real_corpus
    from uniret.bench.runner import bench_config, bench_queries
    from uniret.config import load_params
    from uniret.data.roots import resolve_data_root
    from uniret.retrieval.bundle import open_bundle
    from uniret.serving.source import BundleSource

    params = load_params(None, "cpu")
    cfg = bench_config(params)
    bundle = open_bundle(BundleSource(registry_root=Path("registry")).production()[0].resolve())
    data_root = resolve_data_root(None, params.section("data").root)
    queries = dict(list(bench_queries(data_root, cfg)[0].items())[: cfg.growth.queries])
    return bundle, queries, real_corpus(bundle, data_root), cfg


def synthetic(real, docs: int, cfg):
    """The growth bench's synthetic corpus of `docs` documents copying `real` (growth_setup's)."""
    from uniret.bench.synthetic import SyntheticCorpus

    return SyntheticCorpus(real, docs, cfg.growth.noise, cfg.growth.swap_terms, cfg.growth.seed)


def growth_corpus(docs: int):
    """(production bundle, the growth bench's queries, its synthetic corpus of `docs` documents, the
    bench params): growth_setup for one size."""
    bundle, queries, real, cfg = growth_setup()
    return bundle, queries, synthetic(real, docs, cfg), cfg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--postings", default="3500,1500", help="Seismic n_postings values (average list length kept)")
    parser.add_argument("--out", default="lab/results/pruning_at_scale.json")
    args = parser.parse_args()

    from uniret.bench.growth import index_corpus
    from uniret.bench.machine import machine_info
    from uniret.utils.files import make_temp_dir

    bundle, queries, corpus, cfg = growth_corpus(args.docs)
    Path(cfg.growth.work_dir).mkdir(parents=True, exist_ok=True)
    work = make_temp_dir(cfg.growth.work_dir, "seismic-")
    try:
        measured = _measure(index_corpus(corpus, bundle, work, {"build_seconds_per_doc": {}}), bundle, queries, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {"method": " ".join(__doc__.split("\n\n")[2].split()), "docs": args.docs, "queries": len(queries),
           "depth": bundle.retrieval.fusion.fast_depth, "machine": machine_info(),
           "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **measured}
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"written {args.out}")


def _measure(index, bundle, queries: dict[str, str], args: argparse.Namespace) -> dict:
    """Each route's figures (`_route`, `_dense`) over `index`, its queries recorded through hybrid_fast."""
    from uniret.retrieval.modes import build_searchers

    retrieval = bundle.retrieval
    exhaustive = dataclasses.replace(retrieval, memory_max_docs=max(args.docs, retrieval.memory_max_docs),
                                     pruning=dataclasses.replace(retrieval.pruning, sparse_min_docs=None))
    fast = build_searchers(index, exhaustive, None, bundle.bm25, modes=["hybrid_fast"])["hybrid_fast"]
    bm25_route = fast.searchers[0]
    holders = {"bm25_memory": (bm25_route, bm25_route.doc_weights), "lexical_static": (index.impacts, index.impacts.doc_impacts)}
    recorders = {}
    for name, (holder, _) in holders.items():
        recorders[name] = holder.postings = _Recorder(holder.postings)
    dense_route, dense_queries = fast.searchers[2].route.inner, []
    search = dense_route._search

    def recorded(batch, k):  # the feedback query vectors, as the dense route is handed them
        dense_queries.append(batch.require_encoded(dense_route.mode).dense.copy())
        return search(batch, k)

    dense_route._search = recorded
    for qid, text in queries.items():
        fast.search({qid: text}, 10)
    depth = retrieval.fusion.fast_depth
    out = {"dense_feedback": _dense(index.doc_vectors, np.concatenate(dense_queries).astype(np.float32), depth,
                                    retrieval.pruning)}
    grid = [int(p) for p in args.postings.split(",")]
    for name, (_, w) in holders.items():
        out[name] = _route(name, w, bm25_route.ties, recorders[name].calls, recorders[name].postings, retrieval.pruning, grid)
    return out


if __name__ == "__main__":
    main()
