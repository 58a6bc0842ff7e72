"""Serving latency over HTTP: a real `uniret serve` (uvicorn) on 127.0.0.1, N concurrent clients."""

from __future__ import annotations

import logging
import threading
from itertools import cycle, islice
from pathlib import Path

from uniret.bench.http_client import run_load
from uniret.bench.server import LOOPBACK, LocalServer
from uniret.bench.stats import latency_summary
from uniret.config.serving import HttpBenchConfig

log = logging.getLogger("uniret.bench")


def _resident(process) -> int:
    """A process's resident bytes with the pages it shares split among their sharers (PSS: the workers'
    mapped vectors count once in a sum, E102); its RSS where the platform has no PSS."""
    import psutil

    try:
        return process.memory_full_info().pss
    except (AttributeError, psutil.AccessDenied):
        return process.memory_info().rss


def rss_mb(pid: int) -> float | None:
    """Resident memory of process `pid` and its descendants in MB (with several uvicorn workers the
    bundle lives in the children; shared pages counted once, `_resident`), None where unavailable."""
    import psutil

    try:
        parent = psutil.Process(pid)
        total = _resident(parent)
        children = parent.children(recursive=True)
    except psutil.Error:
        return None
    for child in children:
        try:
            total += _resident(child)
        except psutil.Error:  # exited since it was listed
            pass
    return round(total / 2**20, 1)


def connections_by_worker(pid: int, port: int) -> list[int]:
    """Established connections on `port` held by each process of server `pid` that listens on it
    (its uvicorn workers; the supervisor too only when it serves alone), most first; [] where psutil
    cannot read them."""
    import psutil

    try:
        parent = psutil.Process(pid)
        held = {}
        for proc in (parent, *parent.children(recursive=True)):
            conns = [c for c in proc.net_connections(kind="tcp") if c.laddr and c.laddr.port == port]
            if any(c.status == psutil.CONN_LISTEN for c in conns):
                held[proc.pid] = sum(1 for c in conns if c.status == psutil.CONN_ESTABLISHED)
    except psutil.Error:
        return []
    if len(held) > 1:
        held.pop(pid, None)  # a supervisor holds the socket its workers accept on
    return sorted(held.values(), reverse=True)


class _ConnectionSampler:
    """Samples connections_by_worker while a load runs; keeps the first sample holding all `clients`
    connections ([] when the load ended before one did)."""

    def __init__(self, pid: int, port: int, clients: int) -> None:
        self.pid, self.port, self.clients = pid, port, clients
        self.counts: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="conn-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            counts = connections_by_worker(self.pid, self.port)
            if not counts or sum(counts) >= self.clients:
                self.counts = counts
                return

    def __enter__(self) -> _ConnectionSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def http_latency(bundle_dir: Path, params: Path, profile: str | None, queries: list[str], cfg: HttpBenchConfig,
                 workers: int | None = None) -> dict:
    """{clients: latency summary + failures} per concurrency level, against one server process.

    With a reference mode, each level runs `cfg.rounds` rounds of the mode then the reference mode on
    new connections each, and sums each mode's rounds (requests over the rounds' wall seconds).
    `workers`: the uvicorn processes the server runs with (params serve.workers), recorded with the
    figures; the mode the server answered in (`served_mode`) is read from its /readyz.
    """
    texts = list(islice(cycle(queries), max(len(queries), 1)))
    modes = [cfg.mode] + ([cfg.reference_mode] if cfg.reference_mode else [])
    per_round = [cfg.requests_per_level // cfg.rounds + (r < cfg.requests_per_level % cfg.rounds)
                 for r in range(cfg.rounds)]

    def bodies(mode: str | None):
        # mode None: the served default
        return lambda i: {"query": texts[i % len(texts)], "mode": mode, "k": cfg.k}

    def level(server: LocalServer, clients: int) -> list[dict]:
        latencies: list[list[float]] = [[] for _ in modes]
        walls, failed, errors = [0.0] * len(modes), [0] * len(modes), [[] for _ in modes]
        round_qps: list[list[float]] = [[] for _ in modes]
        spread: list[list[list[int]]] = [[] for _ in modes]
        for requests in per_round:
            for m, mode in enumerate(modes):
                with _ConnectionSampler(server.proc.pid, server.port, min(clients, requests)) as sampler:
                    result = run_load(LOOPBACK, server.port, clients, bodies(mode), requests, cfg.max_seconds / cfg.rounds)
                latencies[m] += result.latencies
                walls[m] += result.wall_seconds
                failed[m] += result.failed
                errors[m] += result.errors
                round_qps[m].append(round(len(result.latencies) / result.wall_seconds, 1) if result.wall_seconds else 0.0)
                spread[m].append(sampler.counts)
        rss = rss_mb(server.proc.pid)  # right after the level, while its buffers and threads are still warm
        return [{**latency_summary(latencies[m], walls[m]), "failed": failed[m], "errors": errors[m][:5],
                 "server_rss_mb": rss, "rounds": len(per_round), "qps_by_round": round_qps[m],
                 "connections_by_worker": spread[m]} for m in range(len(modes))]

    out: dict = {"mode": cfg.mode, "k": cfg.k, "host": LOOPBACK, "workers": workers, "levels": {}}
    with LocalServer(["--bundle", str(bundle_dir)], params, profile) as server:
        server.start(cfg.startup_timeout_s)
        out["served_mode"] = cfg.mode or (server.ready.get("bundle") or {}).get("default_mode")
        # warm each mode's paths in every worker (one client's connection lands on one worker), Lucene's JIT too
        warm_clients, warm_requests = max(cfg.concurrency), max(cfg.warmup_requests, 1)
        warmed = [run_load(LOOPBACK, server.port, warm_clients, bodies(mode), warm_requests, cfg.max_seconds)
                  for mode in modes]
        out["warmup"] = {"clients": warm_clients, "requests_per_mode": [len(r.statuses) + len(r.errors) for r in warmed],
                         "failed": sum(r.failed for r in warmed)}
        if cfg.reference_mode:
            out["reference"] = {"mode": cfg.reference_mode, "levels": {}}
        for clients in cfg.concurrency:
            figures = level(server, clients)
            out["levels"][str(clients)] = figures[0]
            log.info("http %d clients: %s", clients, figures[0])
            if cfg.reference_mode:  # the same server and load in the reference mode: the stack's ceiling
                out["reference"]["levels"][str(clients)] = figures[1]
                log.info("http %d clients, %s mode: %s", clients, cfg.reference_mode, figures[1])
    return out
