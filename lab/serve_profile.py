"""Where a served request's CPU goes: py-spy samples a real `uniret serve` while clients load one mode.

Usage: python lab/serve_profile.py BUNDLE [--modes hybrid_fast bm25] [--clients 16] [--requests 3000]
       [--workers 1] [--rate 200] [--top 40] [--out lab/results/serve_profile]

Per mode: the server (its own uvicorn, 127.0.0.1, every mode offered) is warmed with 200 sequential
requests, then `--clients` keep-alive clients send `--requests` SciFact test queries while
`py-spy record --subprocesses --nonblocking` samples every server process. Written per mode: the raw
collapsed stacks (`<mode>.txt`, for flamegraph.pl or speedscope) and, in `profile.json`, the load's QPS,
the server's CPU per request (psutil user + system of its processes over the load) and the functions
with the largest inclusive and self share of the samples. Needs py-spy (`pip install py-spy`; not in the
product's requirements). Take it on an otherwise idle machine: the CPU figures are the machine's.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml
from server_args import add_server_args, edited_params, scifact_queries

from uniret.bench.http_client import run_load
from uniret.bench.machine import machine_info
from uniret.bench.server import LOOPBACK, LocalServer

WARMUP = 200
SPY_START_S = 1.0  # py-spy attaches to every process before the load starts


def summarize(raw: Path, top: int) -> dict:
    """Inclusive and self shares of each frame over py-spy's collapsed stacks ("a;b;c count" lines)."""
    inclusive, own, total = collections.Counter(), collections.Counter(), 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = stack.split(";")
        total += n
        for frame in set(frames[1:]):  # frames[0] names the process
            inclusive[frame] += n
        own[frames[-1]] += n

    def shares(counts: collections.Counter) -> list[dict]:
        return [{"frame": f, "share": round(n / total, 4)} for f, n in counts.most_common(top)] if total else []

    return {"samples": total, "inclusive": shares(inclusive), "self": shares(own)}


def server_cpu_seconds(pid: int) -> float:
    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    return sum(p.cpu_times().user + p.cpu_times().system for p in procs)


def profile_mode(args: argparse.Namespace, params: Path, queries: list[str], mode: str, out: Path) -> dict:
    body = lambda i: {"query": queries[i % len(queries)], "mode": mode, "k": 10}  # noqa: E731
    with LocalServer(["--bundle", str(args.bundle)], params, args.profile,
                     extra_args=["--workers", str(args.workers), "--modes", "all"]) as server:
        server.start(300)
        run_load(LOOPBACK, server.port, 1, body, WARMUP, 120)
        raw = out / f"{mode}.txt"
        spy = subprocess.Popen([args.py_spy, "record", "-p", str(server.proc.pid), "--subprocesses", "--nonblocking",
                                "-r", str(args.rate), "-f", "raw", "-o", str(raw)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        time.sleep(SPY_START_S)
        cpu = server_cpu_seconds(server.proc.pid)
        load = run_load(LOOPBACK, server.port, args.clients, body, args.requests, 300)
        cpu = server_cpu_seconds(server.proc.pid) - cpu
        spy.send_signal(2)  # SIGINT: py-spy writes its file and exits
        spy.wait(60)
    done = len(load.latencies)
    return {"requests": done, "failed": load.failed, "qps": round(done / load.wall_seconds, 1),
            "server_cpu_ms_per_request": round(cpu / max(done, 1) * 1000, 3), **summarize(raw, args.top)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_server_args(parser)
    parser.add_argument("--modes", nargs="+", default=["hybrid_fast", "bm25"])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers (1: one process to read)")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("lab/results/serve_profile"))
    args = parser.parse_args()
    args.py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(args.py_spy).exists():
        parser.error("py-spy is not installed: pip install py-spy")
    raw = edited_params(args)
    queries = scifact_queries(args)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        params = Path(tmp) / "params.yaml"
        params.write_text(yaml.safe_dump(raw, sort_keys=False))
        result = {"bundle": str(args.bundle), "clients": args.clients, "workers": args.workers, "serve_set": args.set,
                  "machine": machine_info(),
                  "modes": {m: profile_mode(args, params, queries, m, args.out) for m in args.modes}}
    (args.out / "profile.json").write_text(json.dumps(result, indent=2))
    for mode, figures in result["modes"].items():
        print(f"{mode}: {figures['qps']} QPS, {figures['server_cpu_ms_per_request']} ms server CPU a request")
        for row in figures["inclusive"][:12]:
            print(f"  {row['share']:6.1%}  {row['frame']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
