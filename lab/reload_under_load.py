"""A promotion under load with `serve.workers` processes (issue 58: "hot reload still 0 failed").

Usage: python lab/reload_under_load.py BUNDLE_A BUNDLE_B [--params params.yaml] [--profile cpu]
       [--clients 16] [--seconds 40] [--promote-after 10] [--out lab/results/reload_under_load.json]

Publishes A and B into a fresh registry, serves A (`uniret serve --registry`, the params' workers and
pointer watch), drives `clients` keep-alive clients for `seconds`, flips production to B after
`promote-after` seconds (no reload call: every worker follows the pointer), and counts failed
requests and the versions answered before and after. Take it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle_a")
    parser.add_argument("bundle_b")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--promote-after", type=float, default=10.0)
    parser.add_argument("--out", default="lab/results/reload_under_load.json")
    args = parser.parse_args()

    from uniret.bench.http_client import run_load
    from uniret.bench.machine import machine_info
    from uniret.bench.server import LOOPBACK, LocalServer
    from uniret.config import load_params
    from uniret.registry.pointer import point_to, registry_lock
    from uniret.registry.promotion import promote
    from uniret.utils.files import atomic_write_json

    serve = load_params(args.params, args.profile).section("serve")
    with tempfile.TemporaryDirectory(prefix="uniret-reload-load-") as tmp:
        registry = Path(tmp) / "registry"
        b = promote(registry, args.bundle_b, evaluation=None, decision=None, lineage={}, dvc_push=False).version
        a = promote(registry, args.bundle_a, evaluation=None, decision=None, lineage={}, dvc_push=False).version
        queries = ["protein folding in cells", "cancer cell proliferation", "vitamin d deficiency", "gut microbiome"]
        stop = threading.Event()
        with LocalServer(["--registry", str(registry)], args.params, args.profile, log_dir=tmp) as server:
            server.start(300.0)
            result = {}
            load = threading.Thread(target=lambda: result.update(r=run_load(
                LOOPBACK, server.port, args.clients, lambda i: {"query": queries[i % len(queries)], "k": 10},
                10**7, args.seconds, stop=stop)))
            load.start()
            time.sleep(args.promote_after)
            with registry_lock(registry):
                point_to(registry, b)
            load.join()
        r = result["r"]
    out = {"workers": serve.workers, "watch_interval_s": serve.watch_interval_s, "clients": args.clients,
           "seconds": args.seconds, "promoted_after_s": args.promote_after, "from": a, "to": b,
           "requests": len(r.statuses), "failed": sum(s != 200 for s in r.statuses) + len(r.errors),
           "statuses": dict(Counter(map(str, r.statuses))), "errors": r.errors[:5],
           "versions": dict(Counter(map(str, r.versions))), "last_version_per_client": r.per_client_last_version,
           "load_average": os.getloadavg()[0], "machine": machine_info()}
    atomic_write_json(args.out, out)
    print({k: out[k] for k in ("workers", "requests", "failed", "versions", "last_version_per_client")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
