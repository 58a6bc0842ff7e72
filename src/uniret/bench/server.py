"""A real `uniret serve` process on 127.0.0.1 (a free port), for the HTTP benchmark and the tests."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from uniret.bench.http_client import get_json

log = logging.getLogger("uniret.bench")

LOOPBACK = "127.0.0.1"
POLL_S = 0.25  # how often start-up polls /healthz and /readyz


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


class LocalServer:
    """`python -m uniret serve` in a subprocess bound to 127.0.0.1; a context manager that stops it.

    `source_args` are the serve source flags (["--bundle", path] or ["--registry", root]);
    `env` entries are added to the inherited environment (e.g. the admin token).
    """

    def __init__(self, source_args: list[str], params: str | Path, profile: str | None = None,
                 env: dict[str, str] | None = None, extra_args: list[str] | None = None,
                 log_dir: str | Path | None = None):
        self.port = free_port()
        self.base_url = f"http://{LOOPBACK}:{self.port}"
        self.cmd = [sys.executable, "-m", "uniret", "serve", "--params", str(Path(params).resolve()), "--host", LOOPBACK,
                    "--port", str(self.port), *source_args, *(extra_args or [])]
        if profile:
            self.cmd += ["--profile", profile]
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None
        self.ready: dict = {}  # the body of the /readyz (or /healthz) answer start() waited for
        # the server's output; kept after a failure (its tail is quoted in start-up errors)
        self._log = tempfile.NamedTemporaryFile(prefix="uniret-serve-", suffix=".log", delete=False, dir=log_dir)

    @property
    def log_path(self) -> Path:
        return Path(self._log.name)

    def start(self, timeout_s: float, wait_ready: bool = True) -> LocalServer:
        """Start the process; wait for /healthz (and /readyz when `wait_ready`) to answer 200."""
        log.info("starting %s", " ".join(self.cmd))
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        self.ready = self.wait_for("/readyz" if wait_ready else "/healthz", timeout_s)
        return self

    def wait_for(self, path: str, timeout_s: float) -> dict:
        """Poll `path` until it answers 200 and return its JSON body ({} when not an object);
        RuntimeError (with the server log) on exit or timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"uniret serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                status, body = get_json(LOOPBACK, self.port, path, timeout_s=POLL_S * 4)
                if status == 200:
                    return body if isinstance(body, dict) else {}
            except OSError:
                pass  # not listening yet
            time.sleep(POLL_S)
        raise RuntimeError(f"uniret serve: {path} not 200 within {timeout_s}s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (uvicorn shuts down gracefully), SIGKILL if it does not exit in time."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        if exc[0] is None:
            self.log_path.unlink(missing_ok=True)
