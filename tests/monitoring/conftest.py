"""Fixtures of the monitoring tests: Debian's promtool and prometheus binaries, a local webhook receiver.

Like the container tests (tests/conftest.py), a missing binary is a skip on a developer's machine and
a failure under CI ($CI set): .ci/run installs them (.ci/install-prometheus.sh) before the suite.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "k8s" / "monitoring"
RULES = MONITORING / "uniret-alerts.rules.yml"
RULE_TESTS = Path(__file__).with_name("alerts.test.yml")
HOW = "to run them: sudo .ci/install-prometheus.sh (Debian's prometheus package: promtool and prometheus)"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _binary(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        if _in_ci():
            pytest.fail(f"{name} is not installed: under CI the monitoring tests must run (.ci/run installs it)",
                        pytrace=False)
        pytest.skip(f"{name} is not installed; {HOW}")
    return exe


@pytest.fixture(scope="session")
def promtool() -> str:
    return _binary("promtool")


@pytest.fixture(scope="session")
def prometheus() -> str:
    return _binary("prometheus")


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1: every POST body it got (parsed JSON), answering `status`."""

    url: str
    bodies: list = field(default_factory=list)
    status: int = 200


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    received = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server hook name
            length = int(self.headers.get("Content-Length") or 0)
            received.bodies.append({"path": self.path, "content_type": self.headers.get("Content-Type"),
                                    "json": json.loads(self.rfile.read(length))})
            self.send_response(received.status)
            self.end_headers()
            self.wfile.write(b"ok" if received.status < 400 else b"receiver says no")

        def log_message(self, *args):  # keep the test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    received.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/secret-path"
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACES = re.compile(r"\{[^}]*\}|\[[^\]]*\]")
_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NAME = re.compile(r"\b[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
                       "group_right", "inf", "nan"})


def promql_metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (string literals, matchers, ranges, label lists and
    function names left out)."""
    text = _LABEL_LISTS.sub(" ", _BRACES.sub(" ", _STRINGS.sub(" ", expr)))
    names = set()
    for match in _NAME.finditer(text):
        end = match.end()
        if text[end:].lstrip().startswith("("):  # a function call
            continue
        if match.group().lower() not in _KEYWORDS:
            names.add(match.group())
    return names


def sample_names(family) -> set[str]:
    """The series names a metric family puts on /metrics."""
    suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum", "_created"),
                "summary": ("", "_count", "_sum", "_created")}.get(family.type, ("",))
    return {family.name + s for s in suffixes}


@pytest.fixture(scope="session")
def exported_names() -> set[str]:
    """Every series name serving's /metrics may carry: its own metrics and the operations collector's."""
    from uniret.serving.metrics import ServingMetrics
    from uniret.serving.ops_metrics import OperationsCollector

    names: set[str] = set()
    for family in [*ServingMetrics().registry.collect(), *OperationsCollector(lambda: None, None).describe()]:
        names |= sample_names(family)
    return names


@pytest.fixture(scope="session")
def scrape_series() -> set[str]:
    """Series Prometheus itself adds to every target (docs: concepts/jobs_instances)."""
    return {"up"}


@pytest.fixture(scope="session")
def promql_names():
    """`promql_metric_names`, for the tests of this folder."""
    return promql_metric_names
