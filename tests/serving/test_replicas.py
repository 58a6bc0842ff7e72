"""Every replica follows production (issue 55): three real `uniret serve` processes (uvicorn on
127.0.0.1, a port each) on one registry, 8 client threads searching them throughout.

- After a promotion (the pointer flipped, no reload call to anyone) every process serves the new
  version within 2x the watch interval plus its own load of that bundle (the time that process
  logged for it: the three load at about the same moment on shared cores, so a load measured
  earlier, one process at a time, is no bound), and no search fails.
- A damaged bundle promoted by hand (production.json written directly) leaves all three on the old
  version; each reports the refusal once (one failed reload in /metrics, one log line), not once
  per poll.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from uniret.bench.http_client import get_json, post_json, run_load
from uniret.bench.server import LOOPBACK, LocalServer
from uniret.registry.integrity import write_checksums
from uniret.registry.pointer import point_to, registry_lock
from uniret.serving.watch import JITTER

REPLICAS = 3
CLIENTS = (3, 3, 2)  # search threads per process: 8 in all
WATCH_S = 1.0  # serve.watch_interval_s of the test (5 s by default)
POLL_S = 0.05  # how often the test reads each process's /readyz
START_TIMEOUT_S = 240.0  # hang guards, not claimed bounds
GUARD_S = 60.0
QUERY = "cancer cells proliferation"
TOKEN = "test-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def publish_copy(bundle: Path, registry: Path, version: str) -> Path:
    """`bundle` published as <registry>/bundles/<version>, its checksums recorded (as promotion does)."""
    dest = registry / "bundles" / version
    shutil.copytree(bundle, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    (dest / "manifest.json").write_text(json.dumps({**manifest, "version": version}))
    write_checksums(dest)
    return dest


def promote(registry: Path, version: str) -> None:
    """The pointer flip of `uniret promote` (verified, under the lock); no reload call to anyone."""
    with registry_lock(registry):
        point_to(registry, version)


def _version(server: LocalServer) -> str | None:
    status, body = get_json(LOOPBACK, server.port, "/readyz")
    return body["bundle"]["version"] if status == 200 else None


def _failed_reloads(server: LocalServer) -> float:
    text = urllib.request.urlopen(f"{server.base_url}/metrics", timeout=10).read().decode()
    found = re.search(r'^uniret_reloads_total\{result="failed"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def _load_seconds(server: LocalServer, version: str) -> float:
    """How long `server` took to load `version`, from its one "bundle <version> live" log line
    (written just after the swap, so it may trail /readyz by a moment)."""
    pattern = rf"bundle {re.escape(version)} live \(.*\) after a (\d+) ms load"
    deadline = time.monotonic() + GUARD_S
    while not (lines := re.findall(pattern, server.log_tail(400))) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    assert len(lines) == 1, f"expected one load of {version} in the log, found {lines}"
    return int(lines[0]) / 1000.0


@pytest.fixture(scope="module")
def replicas(tiny_bundle, tmp_path_factory, repo_root):
    """(registry, servers): v1 and v2 published, production v1, three processes serving it."""
    base = tmp_path_factory.mktemp("replicas")
    registry = base / "registry"
    for version in ("v1", "v2"):
        publish_copy(tiny_bundle, registry, version)
    promote(registry, "v1")
    params = yaml.safe_load((repo_root / "params.yaml").read_text())
    params["serve"]["watch_interval_s"] = WATCH_S
    (base / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    servers = [LocalServer(["--registry", str(registry)], base / "params.yaml", "tiny", env={"UNIRET_ADMIN_TOKEN": TOKEN},
                           extra_args=["--modes", "served"], log_dir=base) for _ in range(REPLICAS)]
    try:
        with ThreadPoolExecutor(REPLICAS) as pool:  # load the three at once
            list(pool.map(lambda s: s.start(START_TIMEOUT_S), servers))
        yield registry, servers
    finally:
        for server in servers:
            server.stop()


def _hand_promote(registry: Path, version: str) -> None:
    """production.json written by hand (no verification, no lock): what `uniret promote` would refuse."""
    pointer = json.loads((registry / "production.json").read_text())
    history = [{k: v for k, v in pointer.items() if k != "history"}, *pointer["history"]]
    (registry / "production.json").write_text(json.dumps(
        {"version": version, "bundle": f"bundles/{version}", "promoted_at": "2026-01-01T00:00:00Z", "history": history}))


@pytest.mark.slow
def test_every_replica_follows_a_promotion_and_none_takes_a_damaged_bundle(replicas, tiny_bundle):
    registry, servers = replicas
    assert [_version(s) for s in servers] == ["v1"] * REPLICAS
    stop = threading.Event()
    loads: dict[int, object] = {}

    def load(i: int) -> None:
        loads[i] = run_load(LOOPBACK, servers[i].port, CLIENTS[i],
                            lambda n: {"query": f"{QUERY} {n % 5}", "k": 10}, 10**6, 600.0, stop=stop)

    clients = [threading.Thread(target=load, args=(i,)) for i in range(REPLICAS)]
    for thread in clients:
        thread.start()
    try:
        for server in servers:  # the admin path under load: the same version again, reported
            status, body = post_json(LOOPBACK, server.port, "/admin/reload", {"version": "v1"}, AUTH)
            assert status == 200 and body["bundle"]["version"] == "v1" and body["took_ms"] > 0, body

        promote(registry, "v2")  # the pointer flips; nobody is called
        flipped = time.monotonic()
        seen: dict[int, float] = {}
        while len(seen) < REPLICAS and time.monotonic() - flipped < GUARD_S:
            for i, server in enumerate(servers):
                if i not in seen and _version(server) == "v2":
                    seen[i] = time.monotonic() - flipped
            time.sleep(POLL_S)
        assert sorted(seen) == list(range(REPLICAS)), f"not every process reached v2: {seen}"
        load_s = [_load_seconds(server, "v2") for server in servers]
        for i in range(REPLICAS):
            # the watch sees the flip within (1 + JITTER) x the interval; the target allows 2x, plus the
            # process's own load of v2 and the test's own polling step
            allowed = 2 * WATCH_S + load_s[i] + POLL_S
            assert seen[i] <= allowed, (f"process {i} served v2 after {seen[i]:.2f} s, allowed {allowed:.2f} s "
                                        f"(load {load_s[i]:.2f} s, jitter {JITTER})")

        damaged = publish_copy(tiny_bundle, registry, "v3-damaged")
        with (damaged / "docids.json").open("a") as fh:  # after its checksums were recorded
            fh.write(" ")
        _hand_promote(registry, "v3-damaged")
        deadline = time.monotonic() + GUARD_S
        while any(_failed_reloads(s) < 1 for s in servers) and time.monotonic() < deadline:
            time.sleep(POLL_S * 4)
        assert [_failed_reloads(s) for s in servers] == [1.0] * REPLICAS
        time.sleep(4 * WATCH_S * (1 + JITTER))  # several more polls of the damaged pointer by each process
        assert [_failed_reloads(s) for s in servers] == [1.0] * REPLICAS  # tried once, not every poll
        assert [_version(s) for s in servers] == ["v2"] * REPLICAS
        for server in servers:
            refusals = [line for line in server.log_tail(400).splitlines() if "reload of v3-damaged failed" in line]
            assert len(refusals) == 1 and "still serving v2" in refusals[0] and "failed verification" in refusals[0], \
                refusals
    finally:
        stop.set()
        for thread in clients:
            thread.join()

    results = [loads[i] for i in range(REPLICAS)]
    assert [r.errors for r in results] == [[]] * REPLICAS
    statuses = [s for r in results for s in r.statuses]
    assert statuses and set(statuses) == {200}, f"{len(statuses) - statuses.count(200)} failed searches"
    assert {v for r in results for v in r.versions} <= {"v1", "v2"}
    assert [r.per_client_last_version for r in results] == [["v2"] * n for n in CLIENTS]
