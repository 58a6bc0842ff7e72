"""The summary of an HTTP A/B whose servers ran lab/serve_threads.py with the modes bm25 and hybrid_fast
three rounds each (shared_vectors_ab.py, trees_ab.py): hybrid_fast's QPS over the same server's bm25
mode in the steady rounds, per server and per side."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

MODES = ["bm25", "hybrid_fast"] * 3
STEADY = slice(1, None)  # rounds 2 and 3: the bm25 mode's JVM compiled through the first


def summarize_servers(out: Path, forms: Sequence[str], method: str) -> dict:
    """summary.json from the servers' files `<form>-<n>.json` in `out`: per server its steady rounds'
    QPS, ratios and server CPU a request; per form the ratios' range and mean and the mean QPS."""
    servers = []
    for path in sorted(out.glob("*-*.json")):
        rows = json.loads(path.read_text())["modes"]
        by_mode = {m: [r for r in rows if r["mode"] == m][STEADY] for m in ("bm25", "hybrid_fast")}
        ratios = [f["qps"] / b["qps"] for b, f in zip(by_mode["bm25"], by_mode["hybrid_fast"], strict=True)]
        servers.append({"server": path.stem, "form": path.stem.split("-")[0],
                        "hybrid_fast_qps": [r["qps"] for r in by_mode["hybrid_fast"]],
                        "bm25_qps": [r["qps"] for r in by_mode["bm25"]],
                        "hybrid_fast_vs_bm25_qps": [round(r, 3) for r in ratios],
                        "hybrid_fast_server_cpu_ms": [r["server_cpu_ms_per_request"] for r in by_mode["hybrid_fast"]],
                        "bm25_server_cpu_ms": [r["server_cpu_ms_per_request"] for r in by_mode["bm25"]],
                        "failed": sum(r["failed"] for r in rows)})
    per_form = {}
    for form in forms:
        mine = [s for s in servers if s["form"] == form]
        ratios = [r for s in mine for r in s["hybrid_fast_vs_bm25_qps"]]
        qps = [q for s in mine for q in s["hybrid_fast_qps"]]
        per_form[form] = {"servers": len(mine), "ratio_range": [min(ratios), max(ratios)] if ratios else None,
                          "ratio_mean": round(sum(ratios) / len(ratios), 3) if ratios else None,
                          "hybrid_fast_qps_mean": round(sum(qps) / len(qps), 1) if qps else None}
    summary = {"method": method, "forms": per_form, "servers": servers}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def add_ab_args(parser: argparse.ArgumentParser, out: str) -> None:
    """The options every such A/B takes: servers a side, requests a round, the output folder, --summarize."""
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--requests", type=int, default=12000)
    parser.add_argument("--out", type=Path, default=Path(out))
    parser.add_argument("--summarize", type=Path, default=None, help="only rewrite summary.json of this folder")


def print_summary(summary: dict) -> int:
    """Print the per-side figures of a summary; the exit status."""
    print(json.dumps(summary["forms"], indent=2))
    return 0


def summarize_only(args: argparse.Namespace, summarize: Callable[[Path], dict]) -> bool:
    """With --summarize: rewrite that folder's summary.json and print it (True: nothing else to do)."""
    if args.summarize:
        print_summary(summarize(args.summarize))
    return bool(args.summarize)
