"""Every task of a local pipeline run in the built image: kfp.local's DockerRunner over podman.

kfp.local talks to a Docker Engine API (the `docker` SDK, `DOCKER_HOST`). Where no Docker daemon
runs, `podman system service` serves the same API on a unix socket: `podman_service` starts it
for the length of a run. Tasks see the host's paths they need (workdir, params file, data) bound
at the same paths, so the task arguments and `$UNIRET_PARAMS`/`$UNIRET_DATA` mean the same inside.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uniret.core.errors import StageFailed

log = logging.getLogger("uniret.kubeflow")

DOCKER_HOST_ENV = "DOCKER_HOST"
CONTAINERS_CONF_ENV = "CONTAINERS_CONF"
PROJECT_CONTAINERS_CONF = Path("docker") / "podman" / "containers.conf"  # runc, no default ulimits
PING = b"GET /_ping HTTP/1.0\r\n\r\n"
PING_POLL_S = 0.2


@dataclass
class ContainerRun:
    """How the tasks of a local run are containerised."""

    image: str  # every task runs in it (the pipeline's own image is replaced by this one)
    binds: list[tuple[Path, bool]] = field(default_factory=list)  # (host path, read-only), bound at the same path
    environment: dict[str, str] = field(default_factory=dict)
    # The caller's uid:gid, so files the tasks write into bound folders stay the caller's;
    # None: the image's own user (10001), which must then own those folders.
    user: str | None = field(default_factory=lambda: f"{os.getuid()}:{os.getgid()}")
    network_mode: str = "host"  # no bridge networking is needed (or available) for the tasks
    working_dir: str | None = None  # e.g. the workdir: writable for the caller's uid, unlike the image's /app


def docker_runner(run: ContainerRun) -> Any:
    """kfp.local.DockerRunner for `run`: the image's CMD is replaced by kfp's task command."""
    from docker.types import Mount
    from kfp import local

    seen: dict[str, bool] = {}
    for path, read_only in run.binds:  # one mount per path; writable wins over read-only
        key = str(Path(path).resolve())
        seen[key] = seen.get(key, True) and read_only
    mounts = [Mount(target=p, source=p, type="bind", read_only=ro) for p, ro in sorted(seen.items())]
    args: dict[str, Any] = {"mounts": mounts, "environment": dict(run.environment),
                            "network_mode": run.network_mode}
    if run.user:
        args["user"] = run.user
    if run.working_dir:
        args["working_dir"] = run.working_dir
    return local.DockerRunner(**args)


PODMAN_GONE = "no such container"  # podman's 500 body for a container it already removed


@contextmanager
def gone_is_not_found() -> Iterator[None]:
    """While open, the docker SDK raises NotFound for podman's 500 "no such container".

    kfp.local runs each task with auto_remove and catches docker's NotFound when the container
    is already gone as it asks for the logs (a task that exits within the request). Docker
    answers that with 404; podman 4.3 with 500, which kfp does not catch, and the whole run then
    failed on a task that had finished (CI of stop 67). Exit statuses do not reach kfp from
    podman anyway: local.run_local checks every task's manifest instead.
    """
    from docker import errors
    from docker.api.client import APIClient

    original = APIClient._raise_for_status

    def raise_for_status(self: Any, response: Any) -> None:
        try:
            original(self, response)
        except errors.APIError as exc:
            if exc.status_code == 500 and PODMAN_GONE in str(exc.explanation or "").lower():
                raise errors.NotFound(str(exc), response=response, explanation=exc.explanation) from exc
            raise

    APIClient._raise_for_status = raise_for_status
    try:
        yield
    finally:
        APIClient._raise_for_status = original


def _answers(sock: Path) -> bool:
    """True when the Docker API on unix socket `sock` answers /_ping with 200."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            s.connect(str(sock))
            s.sendall(PING)
            return s.recv(64).split(b"\r\n", 1)[0].split()[1:2] == [b"200"]
    except OSError:
        return False


def containers_conf(root: Path) -> str | None:
    """$CONTAINERS_CONF, else the project's docker/podman/containers.conf when present."""
    if os.environ.get(CONTAINERS_CONF_ENV):
        return os.environ[CONTAINERS_CONF_ENV]
    conf = root / PROJECT_CONTAINERS_CONF
    return str(conf) if conf.is_file() else None


@contextmanager
def podman_service(folder: Path, root: Path, timeout_s: float) -> Iterator[str]:
    """`podman system service` on a socket in `folder` for the block; yields its DOCKER_HOST URL."""
    podman = shutil.which("podman")
    if podman is None:
        raise StageFailed("podman not found: install it (apt-get install podman runc) or set $DOCKER_HOST")
    folder.mkdir(parents=True, exist_ok=True)
    sock = folder / "podman.sock"
    env = dict(os.environ)
    conf = containers_conf(root)
    if conf:
        env[CONTAINERS_CONF_ENV] = conf
    logfile = (folder / "podman-service.log").open("wb")
    proc = subprocess.Popen([podman, "system", "service", "--time=0", f"unix://{sock}"], env=env,
                            stdout=logfile, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while not _answers(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise StageFailed(f"podman system service did not answer on {sock} within {timeout_s:g} s "
                                  f"(exit {proc.poll()}); see {folder / 'podman-service.log'}")
            time.sleep(PING_POLL_S)
        log.info("podman serves the Docker API on %s", sock)
        yield f"unix://{sock}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        logfile.close()


@contextmanager
def docker_host(folder: Path, root: Path, timeout_s: float) -> Iterator[str]:
    """$DOCKER_HOST when set (a Docker daemon or a podman socket already running), else a podman service."""
    if os.environ.get(DOCKER_HOST_ENV):
        yield os.environ[DOCKER_HOST_ENV]
        return
    with podman_service(folder, root, timeout_s) as url:
        yield url


def run_binds(workdir: Path, extra: Sequence[str | os.PathLike | None]) -> list[tuple[Path, bool]]:
    """The workdir (writable) and every existing `extra` path (read-only) as bind mounts."""
    binds = [(workdir, False)]
    binds += [(Path(p).resolve(), True) for p in extra if p is not None and Path(p).exists()]
    return binds
