"""The candidate's served mode timed beside production's, query by query in one run.

The gate's BM25 rule lets through a candidate twice as slow as production while both stay within
a multiple of BM25 (issue 55). Timing the two bundles alternately on the same queries
(`time_side_by_side`) puts the machine's drift on both alike, so the ratio of their p50s and p95s
holds on a noisy machine where two separate runs' figures do not (E62).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from uniret.bench.modes import side_by_side_figures, time_side_by_side

log = logging.getLogger("uniret.bench")

CANDIDATE, PRODUCTION = "candidate", "production"


def _served_searcher(bundle_dir: Path, mode: str, threads: int, retrieval):
    """`mode`'s searcher over the bundle in `bundle_dir` (None when the bundle does not offer it)."""
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.modes import build_searchers

    bundle = open_bundle(bundle_dir, None, threads, retrieval)
    return build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, bundle.has_gate).get(mode)


def beside_production(candidate: Path, production: Path | None, production_version: str | None, mode: str,
                      queries: dict[str, str], k: int, threads: int, warmup: int, rounds: int, retrieval) -> dict[str, Any]:
    """{candidate, production: p50/p95 ms, p50_vs_production, p95_vs_production, ...} of `mode`, the two
    bundles timed query by query over `rounds` x `queries` after `warmup` untimed queries; {"skipped": why}
    on a cold start or when production does not offer `mode`."""
    if production is None:
        return {"skipped": "no production bundle (cold start): nothing to compare with"}
    searchers = {CANDIDATE: _served_searcher(candidate, mode, threads, retrieval),
                 PRODUCTION: _served_searcher(production, mode, threads, retrieval)}
    missing = [name for name, s in searchers.items() if s is None]
    if missing:
        return {"skipped": f"mode {mode!r} not offered by the {' and '.join(missing)} bundle"}
    seconds = time_side_by_side({name: (lambda q, s=s: s.search(q, k)) for name, s in searchers.items()},
                                queries, warmup, rounds)
    figures = side_by_side_figures(seconds, rounds, PRODUCTION)
    cand, prod = figures[CANDIDATE], figures[PRODUCTION]
    out = {
        "mode": mode, "k": k, "queries": len(queries), "rounds": rounds, "production_version": production_version,
        CANDIDATE: {"p50_ms": cand["p50_ms"], "p95_ms": cand["p95_ms"]},
        PRODUCTION: {"p50_ms": prod["p50_ms"], "p95_ms": prod["p95_ms"]},
        "p50_vs_production": cand["p50_vs_production"],
        "p95_vs_production": round(cand["p95_ms"] / prod["p95_ms"], 3) if prod["p95_ms"] > 0 else None,
        "per_round_p50_vs_production": cand["per_round_vs_production"],
    }
    log.info("bench: %s beside production %s: p50 x%s, p95 x%s", mode, production_version,
             out["p50_vs_production"], out["p95_vs_production"])
    return out
