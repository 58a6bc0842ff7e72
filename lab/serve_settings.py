"""HTTP latency of one bundle under several `serve` settings (issue 11: micro-batching, threads, processes).

Usage: python lab/serve_settings.py BUNDLE [--data ../shared/data] [--params params.yaml]
       [--configs '{"name": {serve overrides}, ...}'] [--clients 1 16] [--requests 400]
       [--out lab/results/serve_settings.json]

Each setting gets its own uvicorn process on 127.0.0.1 (uniret.bench.http_bench, the same load
generator as `uniret bench`), SciFact test queries, the bundle's served mode, k=10. Take it on an
otherwise idle machine: the figures are the machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import yaml

DEFAULT_CONFIGS = {
    "defaults": {},
    "onnx_threads_1": {"onnx_threads": 1},
    "batch8": {"batch_max": 8, "batch_workers": 1},
    "batch8_2workers_onnx1": {"batch_max": 8, "batch_workers": 2, "onnx_threads": 1},
    "batch16_wait5": {"batch_max": 16, "batch_workers": 1, "batch_wait_ms": 5.0},
    "2_processes_onnx1": {"workers": 2, "onnx_threads": 1},
}
FIELDS = ("p50_ms", "p95_ms", "p99_ms", "qps", "failed", "server_rss_mb")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--configs", default=None, help="JSON object {name: serve overrides} (default: the built-in sweep)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--out", default="lab/results/serve_settings.json")
    args = parser.parse_args(argv)

    from uniret.bench.http_bench import http_latency
    from uniret.bench.machine import machine_info
    from uniret.config.serving import HttpBenchConfig
    from uniret.data.beir import BeirDataset
    from uniret.utils.files import atomic_write_json, shown_path

    base = yaml.safe_load(Path(args.params).read_text())
    configs = json.loads(args.configs) if args.configs else DEFAULT_CONFIGS
    queries = list(BeirDataset(Path(args.data) / "scifact", "scifact").split_queries("test").values())
    cfg = HttpBenchConfig(concurrency=args.clients, requests_per_level=args.requests, max_seconds=60.0,
                          startup_timeout_s=300.0, rounds=1, warmup_requests=10)
    rows = []
    with tempfile.TemporaryDirectory(prefix="uniret-serve-settings-") as tmp:
        for name, serve in configs.items():
            params = Path(tmp) / f"params-{name}.yaml"
            params.write_text(yaml.safe_dump({**base, "serve": {**base["serve"], **serve}}, sort_keys=False))
            levels = http_latency(Path(args.bundle), params, args.profile, queries, cfg)["levels"]
            row = {"name": name, "serve": serve,
                   "levels": {c: {k: lv.get(k) for k in FIELDS} for c, lv in levels.items()}}
            print(json.dumps(row), flush=True)
            rows.append(row)
    result = {"bundle": shown_path(args.bundle, Path.cwd()), "queries": "scifact test",
              "requests_per_level": args.requests, "load_average": os.getloadavg()[0],
              "machine": machine_info(), "settings": rows}
    atomic_write_json(args.out, result)
    return result


if __name__ == "__main__":
    main()
