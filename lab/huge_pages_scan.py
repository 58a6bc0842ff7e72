"""A scan of every vector in a faiss flat index's own memory, before and after huge pages (E61).

Serving reads a flat index's vectors through a view of faiss's storage (no second copy,
retrieval.dense.doc_vectors), which C++ allocated on 4 KB pages; numpy backs its own large arrays
with 2 MB transparent huge pages. For each `--docs` size, random 384-d vectors are added to an
IndexFlatIP, and a batch-1 query is scored against every vector (the exhaustive dense route's
product, one BLAS thread as serving runs it) over three arrays in turn, `--rounds` times: faiss's
storage as it is, a numpy copy of it, and faiss's storage again after `advise_huge_pages` (timed
too). Writes p50 ms per array and size to lab/results/huge_pages_scan.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def scan_p50(arrays: dict[str, np.ndarray], query: np.ndarray, rounds: int) -> dict[str, float]:
    """p50 ms of `query @ array.T` per array, the arrays taking turns each round (the first round warms up)."""
    seconds: dict[str, list[float]] = {name: [] for name in arrays}
    for r in range(rounds + 1):
        for name, array in arrays.items():
            start = time.perf_counter()
            query @ array.T
            if r:
                seconds[name].append(time.perf_counter() - start)
    return {name: round(float(np.median(s)) * 1e3, 3) for name, s in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[10_000, 30_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--out", default="lab/results/huge_pages_scan.json")
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    from uniret.bench.machine import machine_info
    from uniret.retrieval.dense import storage_view
    from uniret.retrieval.faiss_loader import faiss
    from uniret.utils.pages import advise_huge_pages

    report = {"method": __doc__.split("\n\n", 1)[1].strip(), "machine": machine_info(),
              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rounds": args.rounds, "sizes": []}
    rng = np.random.default_rng(7)
    query = rng.standard_normal((1, 384)).astype(np.float32)
    with threadpool_limits(1, user_api="blas"):
        for docs in args.docs:
            index = faiss.IndexFlatIP(384)
            for start in range(0, docs, 100_000):  # added in pieces, as the index stage adds its batches
                index.add(rng.standard_normal((min(100_000, docs - start), 384)).astype(np.float32))
            view = storage_view(index)  # as faiss allocated it: not advised yet
            before = scan_p50({"faiss storage": view, "numpy copy": view.copy()}, query, args.rounds)
            start = time.perf_counter()
            advised = advise_huge_pages(view)
            advise_s = round(time.perf_counter() - start, 3)
            after = scan_p50({"faiss storage, huge pages": view, "numpy copy": view.copy()}, query, args.rounds)
            row = {"docs": docs, "mb": round(view.nbytes / 2**20, 1), "advised": advised, "advise_s": advise_s,
                   "before_p50_ms": before, "after_p50_ms": after}
            report["sizes"].append(row)
            print(json.dumps(row), flush=True)
            del view, index
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
