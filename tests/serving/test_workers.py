"""`uniret serve --workers 2`: two uvicorn processes on one port (a real server on 127.0.0.1).

- No search fails right after /readyz first answers: a worker takes connections only once its
  bundle is loaded, so no request lands on one still loading (the first ready takes them all meanwhile).
- Every scrape, whichever worker answers it, counts every worker's searches (prometheus_client's
  multiprocess mode), where each worker alone served fewer.
- The bench's count of open connections per worker sees both workers and every connection.
- Every worker runs uvicorn's C HTTP parser and event loop (httptools, uvloop: E86), not the
  pure-Python ones uvicorn falls back to.
- The metric files' folder is gone once the server stops.
- A killed worker's in-flight count leaves the sum when the next worker starts; its searches stay.
- One worker with $PROMETHEUS_MULTIPROC_DIR set by the caller writes to a fresh folder: an earlier
  run's files there are not summed.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from uniret.bench.http_bench import connections_by_worker
from uniret.bench.http_client import post_json, request_json
from uniret.bench.server import LOOPBACK, LocalServer
from uniret.serving.metrics import MULTIPROC_ENV, drop_dead_workers

SEARCHES = 48
CLIENTS = 8  # connections open at once, so both workers accept some
SCRAPES = 12
KEPT_ALIVE = 6  # keep-alive connections open at once while the bench's counter reads them
BOTH_SERVING_S = 120.0  # hang guard, not a claimed bound
START_TIMEOUT_S = 240.0  # hang guard, not a claimed bound


def _mapped_libraries(pid: int) -> set[str]:
    """The top-level packages whose compiled modules process `pid` has loaded (its /proc maps)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return set(re.findall(r"site-packages/(\w+)/\S*\.so", maps))


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/metrics", timeout=30) as answer:
        return answer.read().decode()


def _sample_sum(text: str, name: str, labels: str = "") -> float:
    pattern = rf'^{name}\{{[^}}]*{labels}[^}}]*\}} (\S+)$' if labels else rf'^{name}(?:\{{[^}}]*\}})? (\S+)$'
    return sum(float(v) for v in re.findall(pattern, text, re.M))


def _searches_per_worker(folder: Path, scratch: Path) -> dict[str, float]:
    """{pid: 200 searches} read from each worker's own metric files alone."""
    counts = {}
    for pid in sorted({f.stem.split("_")[-1] for f in folder.glob("*.db")}):
        own = scratch / pid
        own.mkdir(parents=True)
        for f in folder.glob(f"*_{pid}.db"):
            shutil.copy(f, own / f.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, str(own))
        counts[pid] = sum(s.value for m in registry.collect() for s in m.samples
                          if s.name == "uniret_search_requests_total" and s.labels.get("status") == "200")
    return counts


@pytest.mark.slow
def test_two_workers_serve_from_the_start_and_every_scrape_counts_both(tiny_bundle, repo_root, tmp_path):
    server = LocalServer(["--bundle", str(tiny_bundle)], repo_root / "params.yaml", "tiny",
                         extra_args=["--workers", "2", "--modes", "served"], log_dir=tmp_path,
                         env={"TMPDIR": str(tmp_path)})
    with server:
        server.start(START_TIMEOUT_S)
        lock, statuses = threading.Lock(), []

        def search(i: int) -> None:
            status, _ = post_json(LOOPBACK, server.port, "/search", {"query": f"cancer cells {i % 7}", "k": 10})
            with lock:
                statuses.append(status)

        folders = [p for p in tmp_path.iterdir() if p.name.startswith("uniret-metrics-")]
        assert len(folders) == 1, folders
        # the first worker ready takes every connection until the second has loaded its bundle: search
        # in rounds until both have served some (on a loaded machine the second can lag by seconds)
        sent, deadline = 0, time.monotonic() + BOTH_SERVING_S
        while True:
            with ThreadPoolExecutor(CLIENTS) as pool:  # a new connection per search
                list(pool.map(search, range(sent, sent + SEARCHES)))
            sent += SEARCHES
            per_worker = _searches_per_worker(folders[0], tmp_path / f"scratch-{sent}")
            if len(per_worker) == 2 and all(per_worker.values()):
                break
            assert time.monotonic() < deadline, f"one worker served every search: {per_worker}"
        assert statuses == [200] * sent
        assert sum(per_worker.values()) == sent
        assert all(0 < n < sent for n in per_worker.values()), per_worker  # both served: a scrape must sum
        for _ in range(SCRAPES):  # a fresh connection each: the kernel hands them to either worker
            text = _scrape(server.port)
            assert _sample_sum(text, "uniret_search_requests_total", 'status="200"') == sent
            assert _sample_sum(text, "uniret_bundle_info") == 1.0  # the answering process's live bundle, one series
        # the bench's view of where keep-alive connections landed: one count per worker, summing to those open
        conns = [http.client.HTTPConnection(LOOPBACK, server.port, timeout=30) for _ in range(KEPT_ALIVE)]
        try:
            for conn in conns:
                assert request_json(conn, "POST", "/search", {"query": "cancer cells", "k": 10})[0] == 200
            by_worker = connections_by_worker(server.proc.pid, server.port)
        finally:
            for conn in conns:
                conn.close()
        assert len(by_worker) == 2 and sum(by_worker) == KEPT_ALIVE, by_worker
        workers = [p for p in psutil.Process(server.proc.pid).children() if "spawn_main" in " ".join(p.cmdline())]
        assert len(workers) == 2 and all(_mapped_libraries(w.pid) >= {"httptools", "uvloop"} for w in workers)
    assert not folders[0].exists()


def test_a_killed_workers_in_flight_count_leaves_the_sum_but_its_searches_stay(tmp_path):
    """A worker killed mid-search never marks itself dead: the next worker to start drops its live gauge."""
    script = ("from prometheus_client import CollectorRegistry, Counter, Gauge\n"
              "r = CollectorRegistry()\n"
              "Gauge('uniret_search_inflight', 'x', registry=r, multiprocess_mode='livesum').set(3)\n"
              "Counter('uniret_search_requests', 'x', registry=r).inc(5)\n")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, MULTIPROC_ENV: str(tmp_path)}, timeout=60)
    assert done.returncode == 0

    def summed() -> dict[str, float]:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, str(tmp_path))
        return {s.name: s.value for m in registry.collect() for s in m.samples}

    assert summed() == {"uniret_search_inflight": 3.0, "uniret_search_requests_total": 5.0}
    (live,) = tmp_path.glob("gauge_livesum_*.db")
    assert drop_dead_workers(tmp_path) == [int(live.stem.rsplit("_", 1)[1])]
    assert summed() == {"uniret_search_requests_total": 5.0}
    assert drop_dead_workers(tmp_path) == []


def _stale_searches(folder: Path, n: int) -> None:
    """Metric files of an earlier run in `folder`: n searches answered 200."""
    script = ("from prometheus_client import CollectorRegistry, Counter\n"
              "r = CollectorRegistry()\n"
              f"Counter('uniret_search_requests', 'x', ['status'], registry=r).labels(status='200').inc({n})\n")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, MULTIPROC_ENV: str(folder)}, timeout=60)
    assert done.returncode == 0


@pytest.mark.slow
def test_one_worker_never_sums_an_earlier_runs_files_from_a_callers_metric_folder(tiny_bundle, repo_root, tmp_path):
    stale = tmp_path / "callers-metrics"
    stale.mkdir()
    _stale_searches(stale, 5)
    before = sorted(p.name for p in stale.iterdir())
    server = LocalServer(["--bundle", str(tiny_bundle)], repo_root / "params.yaml", "tiny",
                         extra_args=["--workers", "1", "--modes", "served"], log_dir=tmp_path,
                         env={"TMPDIR": str(tmp_path), MULTIPROC_ENV: str(stale)})
    with server:
        server.start(START_TIMEOUT_S)
        for i in range(3):
            status, _ = post_json(LOOPBACK, server.port, "/search", {"query": f"cancer cells {i}", "k": 10})
            assert status == 200
        text = _scrape(server.port)
        assert _sample_sum(text, "uniret_search_requests_total", 'status="200"') == 3  # not 8
        fresh = [p for p in tmp_path.iterdir() if p.name.startswith("uniret-metrics-")]
        assert len(fresh) == 1 and any(fresh[0].glob("*.db"))
        assert "is set: this run's metric files go to a fresh folder" in server.log_path.read_text()
    assert sorted(p.name for p in stale.iterdir()) == before  # the caller's folder is left as it was
    assert not fresh[0].exists()
