"""A small keep-alive HTTP/1.1 JSON client and a bounded multi-client load generator (loopback)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


def request_json(conn: http.client.HTTPConnection, method: str, path: str, body: Any = None,
                 headers: dict[str, str] | None = None, raw: bytes | None = None) -> tuple[int, Any]:
    """One request on an open connection; (status, decoded JSON body)."""
    payload = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    conn.request(method, path, body=payload, headers=hdrs)
    resp = conn.getresponse()
    return resp.status, _decode(resp.read())


def get_json(host: str, port: int, path: str, timeout_s: float = 10.0) -> tuple[int, Any]:
    """GET on a fresh connection."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        return request_json(conn, "GET", path)
    finally:
        conn.close()


def post_json(host: str, port: int, path: str, body: Any = None, headers: dict[str, str] | None = None,
              timeout_s: float = 60.0, raw: bytes | None = None) -> tuple[int, Any]:
    """POST on a fresh connection."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        return request_json(conn, "POST", path, body, headers, raw)
    finally:
        conn.close()


@dataclass
class LoadResult:
    """What a load run saw: per-request latency (s), status and the response body's `version`."""

    latencies: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    versions: list[str | None] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # transport errors (connection reset, timeout)
    wall_seconds: float = 0.0
    per_client_last_version: list[str | None] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.errors) + sum(1 for s in self.statuses if s != 200)


def run_load(host: str, port: int, clients: int, bodies: Callable[[int], dict], max_requests: int,
             max_seconds: float, stop: threading.Event | None = None, after_stop: int = 1,
             timeout_s: float = 60.0) -> LoadResult:
    """`clients` threads, each on its own keep-alive connection, POST /search bodies(i).

    Stops at `max_requests` in total or after `max_seconds`, whichever comes first; with `stop`,
    also once `stop` is set and each client has completed `after_stop` requests begun after that.
    """
    result = LoadResult(per_client_last_version=[None] * clients)
    lock = threading.Lock()
    counter = iter(range(max_requests))
    deadline = time.monotonic() + max_seconds

    def client(slot: int) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
        done_after_stop = 0
        try:
            while time.monotonic() < deadline:
                stopping = stop is not None and stop.is_set()
                if stopping and done_after_stop >= after_stop:
                    break
                with lock:
                    i = next(counter, None)
                if i is None:
                    break
                start = time.perf_counter()
                try:
                    status, body = request_json(conn, "POST", "/search", bodies(i))
                except (OSError, http.client.HTTPException) as exc:
                    with lock:
                        result.errors.append(f"{type(exc).__name__}: {exc}")
                    conn.close()
                    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
                    continue
                elapsed = time.perf_counter() - start
                version = body.get("version") if isinstance(body, dict) else None
                with lock:
                    result.latencies.append(elapsed)
                    result.statuses.append(status)
                    result.versions.append(version)
                    result.per_client_last_version[slot] = version
                done_after_stop += int(stopping)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,), name=f"load-{i}") for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.wall_seconds = time.perf_counter() - start
    return result
