"""The large-corpus dense route's shortlist settings, chosen on training queries (E56).

At each corpus size the growth bench's synthetic vectors (uniret.bench.synthetic: the production
bundle's document vectors copied with noise) are indexed as `retrieval.pruning` indexes them (an IVF
index of 4-bit PQ codes, corpus / ivf_points_per_list lists), once with the lists a query probes
found by scoring every centroid (as served) and once through an HNSW graph of the centroids.
SciFact *train* queries (never a test query) are encoded by the bundle's static tables and given
the dense route's feedback: + the
feedback weight x the unit mean of their `feedback_docs` best documents by exact score (a stand-in
for BM25's best, which needs the Lucene index of the corpus). Each query, batch 1 on one thread,
is searched at each (quantizer, nprobe, candidates per k) through `dense.shortlisted`, as the route
does, to the route's depth; its top 10 is compared with the exact scan's, and its whole list (what
the fusion reads) with the scan's list of that depth. Writes lab/results/dense_shortlist.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

GRID = ((64, 8), (64, 6), (64, 4), (32, 8), (32, 4), (16, 4))  # (nprobe, candidates per k); (64, 8): E53's setting
SCAN = "none: every vector scored"  # the first row of each size: the exhaustive route, for its cost
EF_PER_PROBE = 2  # the HNSW quantizer's search candidates per list probed (found 0.99 of the lists at 1M)


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int, chunk: int = 64) -> np.ndarray:
    """Rows [n, k] of each query's k best by exact inner product (ties: the lower row)."""
    from uniret.retrieval.base import top_k_rows

    return np.concatenate([top_k_rows(queries[i:i + chunk] @ vectors.T, k)[0]
                           for i in range(0, len(queries), chunk)])


def feedback_queries(vectors: np.ndarray, queries: np.ndarray, docs: int, weight: float) -> np.ndarray:
    """`queries` with the dense route's feedback from their `docs` best documents by exact score."""
    from uniret.retrieval import feedback

    best = exact_top(vectors, queries, docs)
    return np.stack([feedback.feedback_query(q, lambda r: vectors[r], rows, weight)
                     for q, rows in zip(queries, best, strict=True)])


def hnsw_quantizer(index, links: int):
    """`index` with its lists found through an HNSW graph of their centroids (IVF-HNSW), not by scoring
    every centroid; the documents stay in the lists every centroid assigned them to."""
    from uniret.retrieval.faiss_loader import faiss

    centroids = index.quantizer.reconstruct_n(0, index.nlist)
    graph = faiss.IndexHNSWFlat(centroids.shape[1], links, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = 200
    graph.add(centroids)
    index.quantizer = graph
    index.referenced_objects = [graph]  # faiss does not own it: kept alive with the index
    return index


def set_nprobe(index, nprobe: int) -> None:
    """Probe `nprobe` lists; an HNSW quantizer searches EF_PER_PROBE x as many candidates to find them."""
    from uniret.retrieval.faiss_loader import faiss

    index.nprobe = min(nprobe, index.nlist)
    graph = faiss.downcast_index(index.quantizer)
    if isinstance(graph, faiss.IndexHNSW):
        graph.hnsw.efSearch = EF_PER_PROBE * index.nprobe


def scan_figures(vectors: np.ndarray, queries: np.ndarray, depth: int, rounds: int) -> dict:
    """p50/p95 ms of the route's exhaustive form (every vector scored: `DenseSearcher`'s product and
    partial sort), timed as the grid is, so each grid point's cost compares with the scan it replaces."""
    from uniret.retrieval.base import top_k_rows

    seconds = []
    for r in range(rounds + 1):  # the first round warms up
        for q in queries:
            t0 = time.perf_counter()
            top_k_rows(q[None] @ vectors.T, depth)
            if r:
                seconds.append(time.perf_counter() - t0)
    return {"quantizer": SCAN, "build_s": 0.0, "nlist": 0, "nprobe": 0, "candidates": len(vectors),
            "p50_ms": round(float(np.median(seconds)) * 1e3, 3), "p95_ms": round(float(np.percentile(seconds, 95)) * 1e3, 3),
            "top10_agreement": 1.0, "min_agreement": 1.0, "depth_agreement": 1.0}


def measure(vectors: np.ndarray, queries: np.ndarray, depth: int, pruning, links: int, rounds: int,
            grid: list[tuple[int, int]]) -> list[dict]:
    """The exhaustive scan's p50/p95 ms, then every grid point's, with its top-10 agreement with the scan
    and the agreement of its whole list with the scan's, per quantizer."""
    from uniret.retrieval.dense import build_ivf_shortlist, shortlisted

    exact = exact_top(vectors, queries, depth)
    out = [scan_figures(vectors, queries, depth, rounds)]
    start = time.perf_counter()
    index = build_ivf_shortlist(vectors, pruning.ivf_points_per_list, pruning.ivf_nprobe, pruning.ivf_train_points,
                                pruning.seed)
    for name in ("every centroid", f"HNSW, {links} links"):
        if name.startswith("HNSW"):  # the same lists, found through the graph from here on
            index = hnsw_quantizer(index, links)
        build_s = round(time.perf_counter() - start, 1)  # the IVF index, and the graph for the second
        for nprobe, per_k in grid:
            set_nprobe(index, nprobe)
            candidates = per_k * depth
            seconds, agree, deep = [], [], []
            for r in range(rounds + 1):  # the first round warms up
                for i, q in enumerate(queries):
                    t0 = time.perf_counter()
                    _, rows = shortlisted(index, vectors, q[None], depth, candidates)
                    took = time.perf_counter() - t0
                    if r:
                        seconds.append(took)
                    if r == 1:
                        agree.append(len(set(rows[0][:10].tolist()) & set(exact[i][:10].tolist())) / 10)
                        deep.append(len(set(rows[0].tolist()) & set(exact[i].tolist())) / depth)
            out.append({"quantizer": name, "build_s": build_s, "nlist": index.nlist, "nprobe": index.nprobe,
                        "candidates": candidates, "p50_ms": round(float(np.median(seconds)) * 1e3, 3),
                        "p95_ms": round(float(np.percentile(seconds, 95)) * 1e3, 3),
                        "top10_agreement": round(float(np.mean(agree)), 4), "min_agreement": float(np.min(agree)),
                        "depth_agreement": round(float(np.mean(deep)), 4)})
            print(json.dumps(out[-1]), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=300, help="SciFact train queries (file order)")
    parser.add_argument("--links", type=int, default=32, help="the HNSW quantizer's links a node")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--grid", nargs="+", default=[f"{p}:{c}" for p, c in GRID],
                        help="NPROBE:CANDIDATES_PER_K points (default: %(default)s)")
    parser.add_argument("--out", default="lab/results/dense_shortlist.json")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))
    from pruning_at_scale import growth_setup, synthetic

    from uniret.bench.machine import machine_info
    from uniret.config import load_params
    from uniret.data.roots import open_dataset, resolve_data_root
    from uniret.retrieval.faiss_loader import set_search_threads

    set_search_threads(1)  # as serving searches
    params = load_params(None, "cpu")
    retrieval = params.section("retrieval")
    data_root = resolve_data_root(None, params.section("data").root)
    texts = list(open_dataset(data_root, "scifact").split_queries("train").values())[: args.queries]
    grid = [tuple(int(v) for v in point.split(":")) for point in args.grid]
    bundle, _, real, growth = growth_setup()  # the growth bench's production bundle and real corpus, every size's
    static = bundle.index.static_query.encode(texts).dense.astype(np.float32)
    report = {"method": __doc__.split("\n\n", 1)[1].strip(), "machine": machine_info(),
              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "queries": len(texts),
              "depth": retrieval.fusion.fast_depth, "sizes": {}}
    for n in args.docs:
        vectors = np.ascontiguousarray(synthetic(real, n, growth).dense(), dtype=np.float32)
        queries = feedback_queries(vectors, static, retrieval.fusion.feedback_docs, retrieval.fusion.feedback_weight)
        print(f"{n} docs", file=sys.stderr, flush=True)
        report["sizes"][str(n)] = measure(vectors, queries, retrieval.fusion.fast_depth, retrieval.pruning, args.links,
                                          args.rounds, grid)
        del vectors
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
