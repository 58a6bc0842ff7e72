"""hybrid_fast with its routes in turn or side by side, at several corpus sizes (E60).

`retrieval.pruning.parallel_min_docs` sends the routes that read no other's hits (lexical_static) to a
worker thread beside the caller from that many documents; E38 found the worker slower at SciFact's
5k and E54 faster at 1M, and nothing measured the sizes between. For each `--docs` size the growth
bench's synthetic corpus is indexed and served as params serve it (fast_candidates_ab.served_at),
and each growth query is searched by Lucene BM25 (top 10), by `hybrid_fast` with every route on the
caller's thread and with lexical_static on the worker, query by query for `--rounds` rounds (the
same rankings either way: the fusion's tests compare them). Writes p50/p95 per arm, its ratio to
Lucene's p50 overall and per round, and the paired per-query difference, per size, to
lab/results/parallel_routes_ab.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

IN_TURN, SIDE_BY_SIDE = "hybrid_fast, routes in turn", "hybrid_fast, lexical_static on the worker"


def route_arms(fast, lucene, top: int) -> dict:
    """The three arms over one corpus: Lucene BM25, and `fast` with its worker routes off and on.
    The worker routes are the fusion's own choice when built parallel (`away`), set per search."""
    from fast_candidates_ab import REFERENCE

    away = list(fast.away)
    if not away:
        raise ValueError("the fusion sends no route to a worker: build it with parallel routes")

    def arm(routes: list[int]):
        def search(batch):
            fast.away = routes
            return fast.search(batch, top)
        return search

    return {REFERENCE: lambda batch: lucene.search(batch, top), IN_TURN: arm([]), SIDE_BY_SIDE: arm(away)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[10_000, 30_000, 100_000, 300_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="lab/results/parallel_routes_ab.json")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))
    from fast_candidates_ab import arm_figures, paired, report_per_size

    from uniret.bench import growth
    from uniret.bench.modes import time_side_by_side

    def measure(queries, cfg, forms, _pruning) -> dict:
        arms = route_arms(forms.fast, forms.searchers["bm25"], growth.TOP)
        seconds = time_side_by_side(arms, dict(queries), cfg.growth.warmup, args.rounds)
        return {"arms": arm_figures(seconds, args.rounds),
                f"paired: {IN_TURN} - {SIDE_BY_SIDE}": paired(seconds, IN_TURN, SIDE_BY_SIDE)}

    report_per_size(__doc__, args.docs, args.rounds, args.out, measure)

if __name__ == "__main__":
    main()
