"""What a `uniret serve` holds once ready: seconds to /readyz, resident memory per process, and whether
any process mapped libtorch, for one or more source trees, alternated round by round (E92).

    python lab/serve_memory.py BUNDLE [--variant LABEL=SRC_DIR ...] [--rounds 2] [--workers 2]

A variant runs `python -m uniret serve` with SRC_DIR first on PYTHONPATH (default: this checkout's
src/, labelled `this`), so two commits compare side by side on one machine. Writes
lab/results/serve_memory.json with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import psutil

from uniret.bench.machine import machine_info
from uniret.bench.server import LocalServer
from uniret.ops.results_collect import checkout_commit
from uniret.utils.files import atomic_write_json

REPO = Path(__file__).resolve().parents[1]
SETTLE_S = 3.0  # after /readyz: the workers' last allocations of start-up


def measure(bundle: Path, src: Path, workers: int, params: Path, profile: str | None) -> dict:
    """One start of `uniret serve` on `bundle` with `src` first on PYTHONPATH: its figures once ready."""
    env = {"PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    start = time.perf_counter()
    with LocalServer(["--bundle", str(bundle)], params, profile, env=env,
                     extra_args=["--workers", str(workers)]) as server:
        server.start(300.0)
        ready_s = time.perf_counter() - start
        time.sleep(SETTLE_S)
        root = psutil.Process(server.proc.pid)
        procs = [root, *root.children(recursive=True)]
        rss = [round(p.memory_info().rss / 2**20, 1) for p in procs]
        torch = [p.pid for p in procs if any("libtorch" in m.path for m in p.memory_maps())]
    return {"ready_s": round(ready_s, 2), "rss_mb_by_process": rss, "rss_mb_total": round(sum(rss), 1),
            "processes": len(procs), "processes_with_libtorch": len(torch)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--variant", action="append", default=[], help="LABEL=SRC_DIR (repeatable)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="uvicorn workers (serve.workers' default)")
    parser.add_argument("--params", type=Path, default=REPO / "params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--out", type=Path, default=REPO / "lab" / "results" / "serve_memory.json")
    args = parser.parse_args(argv)
    variants = dict(v.split("=", 1) for v in args.variant) or {"this": str(REPO / "src")}
    runs: dict[str, list[dict]] = {label: [] for label in variants}
    for _ in range(args.rounds):
        for label, src in variants.items():  # alternated: the machine's drift falls on every variant
            runs[label].append(measure(args.bundle, Path(src), args.workers, args.params, args.profile))
    result = {"bundle": args.bundle.name, "workers": args.workers, "profile": args.profile, "machine": machine_info(),
              # the commit each tree is at ('+changes' when it has changes): paths stay out of results
              "variants": {label: {"commit": checkout_commit(Path(src))} for label, src in variants.items()}, "runs": runs}
    atomic_write_json(args.out, result)
    print(json.dumps({label: [(r["ready_s"], r["rss_mb_total"], r["processes_with_libtorch"]) for r in rs]
                      for label, rs in runs.items()}))
    return result


if __name__ == "__main__":
    main()
