"""What UBI logging costs the served mode's HTTP throughput (issue 56: at most 5% at 16 clients).

Usage: python lab/ubi_logging_cost.py BUNDLE [--data ../shared/data] [--params params.yaml] [--profile cpu]
       [--clients 16] [--seconds 30] [--rounds 5] [--out lab/results/ubi_logging_cost.json]

Two uvicorn processes on 127.0.0.1 over the same bundle, one with feedback.log_dir set (logging on,
a temp folder) and one without, run side by side in one run: rounds alternate off/on (off, on, on,
off, ...) so drift in the machine's load falls on both. Each round is `--seconds` of closed-loop
load from `--clients` keep-alive clients (uniret.bench.http_client.run_load, the load generator of
`uniret bench`), SciFact test queries, the served mode, k=10, each search with a client_id. The
JSON holds every round, the median QPS and p50/p95 of each arm, the on/off QPS ratio, failures and
the logging server's written/dropped record counts. Take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
from pathlib import Path

import yaml


def _counter(metrics_text: str, name: str) -> dict[str, float]:
    """{label text: value} of one Prometheus counter in /metrics text."""
    return {m.group(1) or "": float(m.group(2))
            for m in re.finditer(rf"^{name}_total(\{{[^}}]*\}})? (\S+)$", metrics_text, re.M)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per arm")
    parser.add_argument("--out", default="lab/results/ubi_logging_cost.json")
    args = parser.parse_args()

    from uniret.bench.http_client import get_json, run_load
    from uniret.bench.machine import machine_info
    from uniret.bench.server import LOOPBACK, LocalServer
    from uniret.bench.stats import latency_summary
    from uniret.data.beir import BeirDataset
    from uniret.utils.files import atomic_write_json

    base = yaml.safe_load(Path(args.params).read_text())
    queries = list(BeirDataset(Path(args.data) / "scifact", "scifact").split_queries("test").values())

    def body(i: int) -> dict:
        return {"query": queries[i % len(queries)], "k": 10, "client_id": f"bench-{i % 64}"}

    rounds: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="uniret-ubi-cost-") as tmp:
        servers = {}
        for arm, log_dir in (("off", None), ("on", str(Path(tmp) / "logs"))):
            params = Path(tmp) / f"params-{arm}.yaml"
            params.write_text(yaml.safe_dump({**base, "feedback": {**base.get("feedback", {}), "log_dir": log_dir}},
                                             sort_keys=False))
            servers[arm] = LocalServer(["--bundle", str(Path(args.bundle).resolve())], params, args.profile, log_dir=tmp)
        try:
            for server in servers.values():
                server.start(300.0)
                run_load(LOOPBACK, server.port, 1, body, 20, 60.0)  # warm its paths
            order = [("off", "on") if r % 2 == 0 else ("on", "off") for r in range(args.rounds)]
            for r, pair in enumerate(order):
                for arm in pair:
                    res = run_load(LOOPBACK, servers[arm].port, args.clients, body, 10**9, args.seconds)
                    row = {"round": r, "arm": arm, **latency_summary(res.latencies, res.wall_seconds),
                           "failed": res.failed, "errors": res.errors[:3]}
                    rounds.append(row)
                    print(row, flush=True)
            metrics = get_json(LOOPBACK, servers["on"].port, "/metrics")[1]
            logged = _counter(metrics, "uniret_ubi_records_logged")
            dropped = _counter(metrics, "uniret_ubi_records_dropped")
            files = sorted(str(p.relative_to(tmp)) for p in Path(tmp, "logs").rglob("*.jsonl"))
        finally:
            for server in servers.values():
                server.stop()

    def arm_summary(arm: str) -> dict:
        rows = [r for r in rounds if r["arm"] == arm and r["qps"]]
        return {"median_qps": statistics.median(r["qps"] for r in rows),
                "median_p50_ms": statistics.median(r["p50_ms"] for r in rows),
                "median_p95_ms": statistics.median(r["p95_ms"] for r in rows),
                "requests": sum(r["n"] for r in rows), "failed": sum(r["failed"] for r in rounds if r["arm"] == arm)}

    off, on = arm_summary("off"), arm_summary("on")
    out = {
        "command": "python lab/ubi_logging_cost.py " + " ".join(
            [args.bundle, "--clients", str(args.clients), "--seconds", str(args.seconds), "--rounds", str(args.rounds),
             "--profile", args.profile]),
        "clients": args.clients, "seconds_per_round": args.seconds, "rounds_per_arm": args.rounds,
        "off": off, "on": on, "qps_ratio_on_over_off": round(on["median_qps"] / off["median_qps"], 4),
        "cost_share": round(1.0 - on["median_qps"] / off["median_qps"], 4),
        "records_logged": logged, "records_dropped": dropped, "log_files": files,
        "rounds": rounds, "machine": machine_info(),
    }
    atomic_write_json(args.out, out)
    print(f"logging on/off QPS at {args.clients} clients: {on['median_qps']} / {off['median_qps']} "
          f"(cost {out['cost_share']:.1%}); dropped {dropped or 0}; -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
