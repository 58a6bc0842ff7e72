"""hybrid_fast at 1M documents with each count of dense shortlist candidates, side by side (E56).

The growth bench's synthetic corpus of `--docs` documents is indexed and searched as `uniret bench
--only growth` serves it (`retrieval.pruning` at that size: every posting summed, the dense route
through the IVF shortlist, lexical_static on the worker). Each query of the growth set is searched
by Lucene BM25 (top 10) and by `hybrid_fast` with the dense route's candidates at each
`--candidates` x the route depth, one after the other, query by query, for `--rounds` rounds, so
the machine's drift falls on every arm alike. Writes p50/p95 per arm, its ratio to Lucene's p50
overall and per round, and the paired per-query differences, to lab/results/fast_candidates_ab.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

REFERENCE = "lucene_bm25"  # the arm every other is a ratio to


def todays_pruning():
    """`retrieval.pruning` of today's cpu params (not the bundle's): what serves each size."""
    from uniret.config import load_params

    return load_params(None, "cpu").section("retrieval").pruning


def served_at(docs: int, setup=None, parallel: bool | None = None, pruning=None):
    """(bundle, queries as (id, text) pairs, growth params, the served forms, their work folder) of the
    growth bench's synthetic corpus of `docs` documents as `retrieval.pruning` serves that size (the
    dense route through the IVF shortlist when the size calls for it). `setup`: growth_setup()'s result
    and `pruning`: todays_pruning()'s, made once for several sizes; `parallel`: the routes on a worker
    thread (True) or not (False) at any size, instead of from `parallel_min_docs`. The caller removes
    the work folder."""
    sys.path.insert(0, str(Path(__file__).parent))
    from pruning_at_scale import growth_setup, synthetic

    from uniret.bench import growth
    from uniret.utils.files import make_temp_dir

    bundle, queries, real, cfg = setup or growth_setup()
    pruning = pruning or todays_pruning()
    Path(cfg.growth.work_dir).mkdir(parents=True, exist_ok=True)
    work = make_temp_dir(cfg.growth.work_dir, "served-at-")
    try:
        index = growth.index_corpus(synthetic(real, docs, cfg), bundle, work, {"build_seconds_per_doc": {}})
        retrieval = bundle.retrieval
        every = {} if parallel is None else {"parallel_min_docs": 0 if parallel else None}
        build = dataclasses.replace(retrieval, memory_max_docs=max(docs, retrieval.memory_max_docs), pruning=dataclasses.replace(
            pruning, sparse_min_docs=None, dense_min_docs=0, **every))
        forms = growth.ServedForms(index, bundle, build, pruning)
        forms.use(False, pruning.dense(docs))
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return bundle, list(queries.items()), cfg, forms, work


def report_per_size(doc: str, sizes: list[int], rounds: int, out: str, measure) -> None:
    """The per-size lab loop: searches on one thread as serving runs them, each of `sizes` served as
    served_at serves it with the routes on a worker (one growth setup and one params read for all),
    `measure(queries, growth params, forms, pruning)` -> the size's figures, printed as they come, then
    the report (report_head(doc) with a row per size) written to `out`. Each size's work folder is
    removed before the next is built."""
    sys.path.insert(0, str(Path(__file__).parent))
    from pruning_at_scale import growth_setup

    from uniret.retrieval.faiss_loader import set_search_threads

    set_search_threads(1)  # as serving searches
    setup, pruning = growth_setup(), todays_pruning()
    report = report_head(doc, rounds=rounds, sizes=[])
    for docs in sizes:
        _, queries, cfg, forms, work = served_at(docs, setup, parallel=True, pruning=pruning)
        try:
            row = {"docs": docs, "queries": len(queries), **measure(queries, cfg, forms, pruning)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        report["sizes"].append(row)
        print(json.dumps(row), flush=True)
    Path(out).write_text(json.dumps(report, indent=1) + "\n")


def report_head(doc: str, **fields) -> dict:
    """A lab report's opening fields: the method (the body of the script's module doc), the machine, the
    time, then `fields`."""
    from uniret.bench.machine import machine_info

    return {"method": doc.split("\n\n", 1)[1].strip(), "machine": machine_info(),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields}


def arm_figures(seconds: dict[str, list[float]], rounds: int) -> dict[str, dict]:
    """Per arm: p50/p95 ms, the ratio of its p50 to the REFERENCE arm's, overall and per round."""
    from uniret.bench.modes import side_by_side_figures

    return side_by_side_figures(seconds, rounds, REFERENCE)


def paired(seconds: dict[str, list[float]], first: str, second: str) -> dict[str, float]:
    """The median per-query difference first - second (ms) and the share of queries where second was faster."""
    diff = np.array(seconds[first]) - np.array(seconds[second])
    return {"median_ms": round(float(np.median(diff)) * 1e3, 3), "share_faster": round(float(np.mean(diff > 0)), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--candidates", type=int, nargs="+", default=[8, 4], help="candidates per k, one arm each")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="lab/results/fast_candidates_ab.json")
    args = parser.parse_args()

    from uniret.bench import growth
    from uniret.bench.modes import time_side_by_side
    from uniret.retrieval.faiss_loader import set_search_threads

    set_search_threads(1)  # as serving searches
    _, queries, cfg, forms, work = served_at(args.docs)
    try:
        fast, dense = forms.fast, forms.ivf_dense
        lucene = forms.searchers["bm25"]

        def arm(per_k: int):
            def search(batch):
                dense.shortlist = per_k
                return fast.search(batch, growth.TOP)
            return search

        arms = {REFERENCE: lambda batch: lucene.search(batch, growth.TOP),
                **{f"hybrid_fast, {c} x k candidates": arm(c) for c in args.candidates}}
        seconds = time_side_by_side(arms, dict(queries), cfg.growth.warmup, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = report_head(__doc__, docs=args.docs, queries=len(queries), rounds=args.rounds, parallel=fast.parallel,
                         nprobe=dense.fast_scan.nprobe, arms=arm_figures(seconds, args.rounds))
    names = [name for name in arms if name != REFERENCE]
    for first, second in zip(names, names[1:], strict=False):
        report[f"paired: {first} - {second}"] = paired(seconds, first, second)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["arms"], indent=1))


if __name__ == "__main__":
    main()
