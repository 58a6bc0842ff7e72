"""Per-query BM25 latency (issue 11): the old serving path against the array searcher, interleaved.

Usage: python lab/bm25_topk.py INDEX [--data ../shared/data] [--dataset scifact] [--split test]
       [--depths 100 1000] [--rounds 3] [--max-queries N] [--params params.yaml] [--out lab/results/bm25_topk.json]

INDEX is a Lucene BM25 index (a bundle's bm25/ folder, or artifacts/bm25/indexes/<dataset>).
Each query is searched alone, as serving does:
- `simple_searcher`: what the BM25 mode did before, Bm25Searcher.search({qid: text}, k)
  (Anserini SimpleSearcher.batch_search, one pyjnius object per hit);
- `arrays`: Bm25ArraySearcher.search(text, k) plus building the {docid: score} dict (with the
  Java helpers: hits collected by score, ordered by uniret.IdOrder);
- `arrays_sorted`: the same through Lucene's sorted collector (the path before IdOrder);
- `arrays_anserini`: the same without the Java helpers (Anserini's ScoredDocs).
The paths alternate query by query in every round, so load on the machine hits them alike; the
result records the load average. All return identical runs (checked on every query first;
`--rounds 0` runs only that check).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--split", default="test")
    parser.add_argument("--depths", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-queries", type=int, default=None, help="first N queries of the split (file order)")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--out", default="lab/results/bm25_topk.json")
    args = parser.parse_args()

    from uniret.config import load_params
    from uniret.data.beir import BeirDataset
    from uniret.lexical.bm25 import Bm25Searcher
    from uniret.lexical.bm25_arrays import Bm25ArraySearcher
    from uniret.utils.files import shown_path

    cfg = load_params(args.params).section("bm25")
    queries = BeirDataset(Path(args.data) / args.dataset, args.dataset).split_queries(args.split)
    items = list(queries.items())[: args.max_queries]
    start = time.time()
    with (Bm25Searcher(args.index, cfg) as old, Bm25ArraySearcher(args.index, cfg) as new,
          Bm25ArraySearcher(args.index, cfg, by_score=False) as sorted_collector,
          Bm25ArraySearcher(args.index, cfg, use_helpers=False) as plain):
        def search_old(qid: str, text: str, k: int) -> dict[str, float]:
            return old.search({qid: text}, k, progress=False).get(qid, {})

        def arrays_of(searcher: Bm25ArraySearcher):
            def search(qid: str, text: str, k: int) -> dict[str, float]:
                ids, scores = searcher.search(text, k)
                return {searcher.docids[i]: s for i, s in zip(ids.tolist(), scores.tolist(), strict=True)}
            return search

        # arrays: uniret.TopDocsArrays when the Java helpers compiled; arrays_anserini: ScoredDocs
        paths = {"simple_searcher": search_old, "arrays": arrays_of(new), "arrays_sorted": arrays_of(sorted_collector),
                 "arrays_anserini": arrays_of(plain)}
        result: dict = {"index": shown_path(args.index, Path.cwd()), "queries": len(items), "rounds": args.rounds,
                        "k1": cfg.k1, "b": cfg.b, "threads": cfg.threads,
                        "java_helpers": new.uses_helpers, "depths": {}}
        for k in args.depths:
            for qid, text in items:  # warm-up, and the identity check on every query
                want = list(search_old(qid, text, k).items())
                for name, fn in paths.items():
                    if list(fn(qid, text, k).items()) != want:
                        raise SystemExit(f"query {qid}: {name} differs from simple_searcher at k={k}")
            if args.rounds == 0:
                result["depths"][str(k)] = {"identical_queries": len(items)}
                print(f"k={k}: every path identical on {len(items)} queries")
                continue
            lat: dict[str, list[float]] = {name: [] for name in paths}
            for _ in range(args.rounds):
                for qid, text in items:
                    for name, fn in paths.items():
                        t0 = time.perf_counter()
                        fn(qid, text, k)
                        lat[name].append(time.perf_counter() - t0)
            row = {name: {"p50_ms": round(1000 * statistics.median(v), 3),
                          "p95_ms": round(1000 * percentile(v, 0.95), 3),
                          "mean_ms": round(1000 * statistics.fmean(v), 3)} for name, v in lat.items()}
            row["p50_speedup"] = round(row["simple_searcher"]["p50_ms"] / row["arrays"]["p50_ms"], 2)
            row["identical_queries"] = len(items)
            result["depths"][str(k)] = row
            print(f"k={k}: {json.dumps(row)}")
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    result["nice"] = os.nice(0)
    result["seconds"] = round(time.time() - start, 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(out)
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
