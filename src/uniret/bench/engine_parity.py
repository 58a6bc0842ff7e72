"""Parity and speed of one searcher set against another (Milvus's against the in-process ones), on
the same queries.

- `agreement`: per query, whether the top k doc ids (in order) are the same, and the largest score
  difference on the documents both top-k lists hold;
- `compare_modes`: that for every mode, plus nDCG@k of both runs on the judged queries;
- `speed`: latency (p50, p95) of one query at a time and QPS with 1 and with N concurrent clients,
  query encoding included (and excluded), for both searcher sets in the same run, interleaved
  query by query (ratios hold on a shared machine).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from uniret.bench.modes import effectiveness
from uniret.bench.stats import latency_summary
from uniret.core.runs import Run, ranked
from uniret.retrieval.base import QueryBatch, Searcher

log = logging.getLogger("uniret.bench")


def agreement(local: Run, remote: Run, k: int) -> dict:
    """How far `remote`'s top k is from `local`'s, over the queries of `local`."""
    same = same_set = 0
    max_abs = max_rel = 0.0
    for qid, hits in local.items():
        ours = ranked(hits, k)
        theirs = ranked(remote.get(qid, {}), k)
        same += [d for d, _ in ours] == [d for d, _ in theirs]
        same_set += {d for d, _ in ours} == {d for d, _ in theirs}
        other = remote.get(qid, {})
        for doc, score in ours:
            if doc in other:
                diff = abs(other[doc] - score)
                max_abs = max(max_abs, diff)
                max_rel = max(max_rel, diff / max(abs(score), 1e-12))
    n = max(len(local), 1)
    return {"queries": len(local), f"same_top{k}": round(same / n, 4), f"same_top{k}_set": round(same_set / n, 4),
            "max_abs_score_diff": float(f"{max_abs:.3g}"), "max_rel_score_diff": float(f"{max_rel:.3g}")}


def compare_modes(local: dict[str, Searcher], remote: dict[str, Searcher], batch: QueryBatch, qrels: dict,
                  modes: list[str], depth: int, k: int = 10) -> dict:
    """{mode: agreement at k + nDCG@k of both} with runs `depth` deep (the evaluation's depth)."""
    out = {}
    for mode in modes:
        if mode not in local or mode not in remote:
            out[mode] = {"skipped": "not offered " + ("in-process" if mode not in local else "over Milvus")}
            continue
        ours = local[mode].search_batch(batch, depth)
        theirs = remote[mode].search_batch(batch, depth)
        row = agreement(ours, theirs, k)
        ndcg_ours, ndcg_theirs = effectiveness(ours, qrels, k), effectiveness(theirs, qrels, k)
        row.update({f"ndcg@{k}": ndcg_ours, f"ndcg@{k}_milvus": ndcg_theirs,
                    f"ndcg@{k}_diff": None if ndcg_ours is None else round(abs(ndcg_theirs - ndcg_ours), 4)})
        row.update({f"depth{depth}_{key}": value for key, value in agreement(ours, theirs, depth).items()
                    if key.startswith("same") or key.startswith("max")})
        out[mode] = row
        log.info("parity %s: %s", mode, row)
    return out


def concurrent_qps(search, queries: dict[str, str], clients: int) -> dict:
    """Latency and QPS of `search(qid, text)` over `queries` with `clients` threads at once."""
    items = list(queries.items())

    def one(item):
        start = time.perf_counter()
        search(*item)
        return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(one, items))
    return latency_summary(latencies, time.perf_counter() - start)


def interleaved(calls: dict[str, object], items: list, warmup: int) -> dict[str, list[float]]:
    """Seconds per item of every `calls[engine](item)`, the engines taking turns on each item (the
    first engine rotates), so a load change on a shared machine hits them alike."""
    names = list(calls)
    for item in items[:warmup]:
        for name in names:
            calls[name](item)
    out: dict[str, list[float]] = {name: [] for name in names}
    for i, item in enumerate(items):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start = time.perf_counter()
            calls[name](item)
            out[name].append(time.perf_counter() - start)
    return out


def speed(searchers: dict[str, dict[str, Searcher]], modes: list[str], queries: dict[str, str], k: int,
          clients: int, warmup: int) -> dict:
    """{mode: {engine: {"1_client", "search_only", "<clients>_clients"}}} on the same queries:
    - 1_client: one query at a time through serving's call (search_one: query encoding outside, Lucene
      inside the Java lock), the engines interleaved query by query;
    - search_only: the same with the query encoded beforehand (what the engine itself costs);
    - <clients>_clients: `clients` threads at once, one engine after the other."""
    from uniret.serving.state import search_one

    items = list(queries.items())
    out: dict[str, dict] = {}
    for mode in modes:
        offered = {engine: s[mode] for engine, s in searchers.items() if mode in s}
        encoded = {}
        for engine, searcher in offered.items():
            batches = [QueryBatch.from_dict({qid: text}) for qid, text in items]
            if searcher.encoder is not None:
                for batch in batches:
                    batch.encoded = searcher.encoder.encode(batch.texts, is_query=True)
            encoded[engine] = batches
        full = interleaved({e: (lambda item, s=s: search_one(s, item[0], item[1], k)) for e, s in offered.items()},
                           items, warmup)
        bare = interleaved({e: (lambda i, s=s, b=encoded[e]: s.search_batch(b[i], k)) for e, s in offered.items()},
                           list(range(len(items))), warmup)
        row = {}
        for engine, searcher in offered.items():
            row[engine] = {"1_client": latency_summary(full[engine]), "search_only": latency_summary(bare[engine]),
                           f"{clients}_clients": concurrent_qps(lambda q, t, s=searcher: search_one(s, q, t, k),
                                                                 queries, clients)}
        out[mode] = row
        log.info("speed %s: %s", mode, row)
    return out
