"""Serving latency over HTTP: a real `uniret serve` (uvicorn) on 127.0.0.1, N concurrent clients."""

from __future__ import annotations

import logging
from itertools import cycle, islice
from pathlib import Path

from uniret.bench.http_client import run_load
from uniret.bench.server import LOOPBACK, LocalServer
from uniret.bench.stats import latency_summary
from uniret.config.serving import HttpBenchConfig

log = logging.getLogger("uniret.bench")


def rss_mb(pid: int) -> float | None:
    """Resident memory of process `pid` and its descendants in MB (with several uvicorn workers the
    bundle lives in the children), None where unavailable. psutil, as uniret.bench.growth reads it."""
    import psutil

    try:
        parent = psutil.Process(pid)
        total = parent.memory_info().rss
        children = parent.children(recursive=True)
    except psutil.Error:
        return None
    for child in children:
        try:
            total += child.memory_info().rss
        except psutil.Error:  # exited since it was listed
            pass
    return round(total / 2**20, 1)


def http_latency(bundle_dir: Path, params: Path, profile: str | None, queries: list[str], cfg: HttpBenchConfig,
                 warmup: int, workers: int | None = None) -> dict:
    """{clients: latency summary + failures} per concurrency level, against one server process.

    `workers`: the uvicorn processes the server runs with (params serve.workers), recorded with the
    figures; the mode the server answered in (`served_mode`) is read from its /readyz.
    """
    texts = list(islice(cycle(queries), max(len(queries), 1)))

    def bodies(mode: str | None):
        # mode None: the served default
        return lambda i: {"query": texts[i % len(texts)], "mode": mode, "k": cfg.k}

    def level(server: LocalServer, clients: int, mode: str | None) -> dict:
        result = run_load(LOOPBACK, server.port, clients, bodies(mode), cfg.requests_per_level, cfg.max_seconds)
        summary = latency_summary(result.latencies, result.wall_seconds)
        # server memory right after the level, while its buffers and threads are still warm
        return {**summary, "failed": result.failed, "errors": result.errors[:5], "server_rss_mb": rss_mb(server.proc.pid)}

    out: dict = {"mode": cfg.mode, "k": cfg.k, "host": LOOPBACK, "workers": workers, "levels": {}}
    with LocalServer(["--bundle", str(bundle_dir)], params, profile) as server:
        server.start(cfg.startup_timeout_s)
        out["served_mode"] = cfg.mode or (server.ready.get("bundle") or {}).get("default_mode")
        run_load(LOOPBACK, server.port, 1, bodies(cfg.mode), max(warmup, 1), cfg.max_seconds)  # warm its paths
        if cfg.reference_mode:
            run_load(LOOPBACK, server.port, 1, bodies(cfg.reference_mode), max(warmup, 1), cfg.max_seconds)
            out["reference"] = {"mode": cfg.reference_mode, "levels": {}}
        for clients in cfg.concurrency:
            out["levels"][str(clients)] = level(server, clients, cfg.mode)
            log.info("http %d clients: %s", clients, out["levels"][str(clients)])
            if cfg.reference_mode:  # the same server and load in the reference mode: the stack's ceiling
                out["reference"]["levels"][str(clients)] = ref = level(server, clients, cfg.reference_mode)
                log.info("http %d clients, %s mode: %s", clients, cfg.reference_mode, ref)
    return out
