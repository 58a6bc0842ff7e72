"""Latency, QPS and nDCG of every retrieval mode on the same queries, one query at a time.

Each query is searched alone (batch 1), query encoding included: what a serving request costs.
BM25 (Lucene) is the reference the other modes are compared with.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np
from tqdm.auto import tqdm

from uniret.bench.stats import latency_summary
from uniret.core.runs import Run
from uniret.evaluation.metrics import evaluate_run
from uniret.retrieval.base import Searcher

log = logging.getLogger("uniret.bench")


def time_queries(search, queries: dict[str, str], warmup: int, desc: str) -> tuple[list[float], Run]:
    """Call `search({qid: text})` per query after `warmup` untimed calls; (seconds per query, merged run)."""
    items = list(queries.items())
    for qid, text in items[:warmup]:
        search({qid: text})
    latencies: list[float] = []
    run: Run = {}
    for qid, text in tqdm(items, desc=desc, leave=False, disable=None):
        start = time.perf_counter()
        out = search({qid: text})
        latencies.append(time.perf_counter() - start)
        run.update(out)
    return latencies, run


def time_side_by_side(searches: dict[str, Callable[[dict[str, str]], object]], queries: dict[str, str], warmup: int,
                      rounds: int) -> dict[str, list[float]]:
    """Seconds of each search on each query (`rounds` x the queries, in that order): every search answers a
    query before the next query, so the machine's drift falls on all of them alike and the ratio of two
    p50s holds where a mode-by-mode timing does not; `warmup` queries first, untimed."""
    items = list(queries.items())
    for qid, text in items[:warmup]:
        for search in searches.values():
            search({qid: text})
    seconds: dict[str, list[float]] = {name: [] for name in searches}
    for _ in range(rounds):
        for qid, text in items:
            for name, search in searches.items():
                start = time.perf_counter()
                search({qid: text})
                seconds[name].append(time.perf_counter() - start)
    return seconds


def side_by_side_figures(seconds: dict[str, list[float]], rounds: int, reference: str) -> dict[str, dict]:
    """Per search of a `time_side_by_side` result: p50/p95 ms and the ratio of its p50 to the `reference`
    search's, overall and per round."""
    base = seconds[reference]
    n = len(base) // rounds
    out = {}
    for name, values in seconds.items():
        out[name] = {
            "p50_ms": round(float(np.median(values)) * 1e3, 3), "p95_ms": round(float(np.percentile(values, 95)) * 1e3, 3),
            f"p50_vs_{reference}": round(float(np.median(values) / np.median(base)), 3),
            f"per_round_vs_{reference}": [round(float(np.median(values[r * n:(r + 1) * n])
                                                      / np.median(base[r * n:(r + 1) * n])), 3) for r in range(rounds)]}
    return out


def effectiveness(run: Run, qrels: dict, eval_k: int) -> float | None:
    """nDCG@eval_k of `run` over the judged queries it covers (None when none is judged)."""
    judged = {q: qrels[q] for q in run if q in qrels}
    if not judged:
        return None
    return round(evaluate_run(judged, run, [f"ndcg@{eval_k}"])[1][f"ndcg@{eval_k}"], 4)


def warm_jvm(searcher: Searcher, queries: dict[str, str], calls: int, k: int) -> dict:
    """`calls` untimed searches of `searcher` (BM25), the queries in turn: the JVM's JIT compiles Lucene's
    search and analyzer paths over its first ~4,000 calls, and until then BM25's p50 reads up to 2-3x its
    steady one (E100). {"queries": calls, "seconds": wall time}."""
    items = list(queries.items())
    start = time.perf_counter()
    for i in range(calls if items else 0):
        qid, text = items[i % len(items)]
        searcher.search({qid: text}, k)
    return {"queries": calls if items else 0, "seconds": round(time.perf_counter() - start, 2)}


def bench_modes(searchers: dict[str, Searcher], modes: list[str], queries: dict[str, str], qrels: dict,
                k: int, eval_k: int, warmup: int) -> dict:
    """{mode: latency summary + ndcg}, plus each mode's p50 relative to BM25's."""
    out: dict[str, dict] = {}
    for mode in modes:
        if mode not in searchers:
            out[mode] = {"skipped": "mode not offered by this bundle"}
            continue
        searcher = searchers[mode]
        latencies, run = time_queries(lambda q, s=searcher: s.search(q, k), queries, warmup, f"bench {mode}")
        out[mode] = {**latency_summary(latencies), f"ndcg@{eval_k}": effectiveness(run, qrels, eval_k)}
        log.info("mode %s: %s", mode, out[mode])
    base = out.get("bm25", {}).get("p50_ms")
    for row in out.values():
        if base and row.get("p50_ms") is not None:
            row["p50_vs_bm25"] = round(row["p50_ms"] / base, 3)
    return out
