"""Where a loaded `uniret serve` spends its CPU, thread by thread, per mode: no sampler attached.

Usage: python lab/serve_threads.py BUNDLE [--modes bm25 hybrid_fast] [--clients 16] [--requests 4000]
       [--workers 2] [--set retrieval.pruning.dense_min_docs=null] [--out lab/results/serve_threads/x.json]

One server (127.0.0.1, every mode offered, `--workers` uvicorn processes) is warmed with 2,000
requests per mode at 64 clients (the bench's warm-up: the bm25 mode's JVM compiles its hot paths),
then each mode in `--modes` takes `--requests` SciFact test queries from `--clients` keep-alive
clients, in the order given (name a mode twice to see it drift). Per mode: QPS, the server's CPU per
request (every thread of every process, from /proc), the CPU per request of each thread above 5 us
(named by its process and `comm`: `python` threads, the JVM's `C2 CompilerThre`...), and this client's
own CPU per request. `--set KEY=VALUE` edits params.yaml for the server (dotted keys; a bare key is
under serve). CPU figures are the machine's: take them on an otherwise idle one.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import yaml
from server_args import add_server_args, edited_params, scifact_queries, thread_cpu

from uniret.bench.http_client import run_load
from uniret.bench.machine import machine_info
from uniret.bench.server import LOOPBACK, LocalServer

WARMUP_REQUESTS, WARMUP_CLIENTS = 2000, 64
SHOWN_MS = 0.005  # threads below this CPU per request are summed, not listed


def client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load_mode(server: LocalServer, queries: list[str], mode: str, clients: int, requests: int) -> dict:
    body = lambda i: {"query": queries[i % len(queries)], "mode": mode, "k": 10}  # noqa: E731
    before, mine, start = thread_cpu(server.proc.pid), client_cpu(), time.perf_counter()
    load = run_load(LOOPBACK, server.port, clients, body, requests, 120)
    wall, mine, after = time.perf_counter() - start, client_cpu() - mine, thread_cpu(server.proc.pid)
    done = max(len(load.latencies), 1)
    per = {key: (after[key] - before.get(key, 0.0)) / done * 1000 for key in after}
    shown = sorted(((ms, key) for key, ms in per.items() if ms >= SHOWN_MS), reverse=True)
    return {"mode": mode, "requests": len(load.latencies), "failed": load.failed, "qps": round(done / wall, 1),
            "server_cpu_ms_per_request": round(sum(per.values()), 3),
            "threads": [{"process": p, "thread": t, "name": n, "cpu_ms_per_request": round(ms, 3)}
                        for ms, (p, t, n) in shown],
            "other_threads_ms_per_request": round(sum(ms for ms in per.values() if ms < SHOWN_MS), 3),
            "client_cpu_ms_per_request": round(mine / done * 1000, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_server_args(parser)
    parser.add_argument("--modes", nargs="+", default=["bm25", "hybrid_fast"])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    raw = edited_params(args)
    queries = scifact_queries(args)
    with tempfile.TemporaryDirectory() as tmp:
        params = Path(tmp) / "params.yaml"
        params.write_text(yaml.safe_dump(raw, sort_keys=False))
        with LocalServer(["--bundle", str(args.bundle)], params, args.profile,
                         extra_args=["--workers", str(args.workers), "--modes", "all"]) as server:
            server.start(300)
            for mode in dict.fromkeys(args.modes):
                body = lambda i, m=mode: {"query": queries[i % len(queries)], "mode": m, "k": 10}  # noqa: E731
                run_load(LOOPBACK, server.port, WARMUP_CLIENTS, body, WARMUP_REQUESTS, 120)
            rows = [load_mode(server, queries, m, args.clients, args.requests) for m in args.modes]
    result = {"bundle": args.bundle.name, "workers": args.workers, "clients": args.clients, "set": args.set,
              "machine": machine_info(), "modes": rows}
    for row in rows:
        top = ", ".join(f"{t['name']} {t['cpu_ms_per_request']}" for t in row["threads"][:4])
        print(f"{row['mode']}: {row['qps']} QPS, server {row['server_cpu_ms_per_request']} ms a request ({top}), "
              f"client {row['client_cpu_ms_per_request']} ms")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
