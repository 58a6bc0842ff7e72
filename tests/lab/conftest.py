"""Fixtures of the lab scripts' tests: a script of lab/ imported as a module."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def lab_script(repo_root):
    """load(name) -> lab/<name>.py as a module (registered in sys.modules while the test module runs,
    as its dataclasses look their module up there), lab/ on sys.path meanwhile."""
    loaded = []
    lab = str(repo_root / "lab")
    sys.path.insert(0, lab)  # as `python lab/<name>.py` runs it: its sibling modules (dag_args, server_args) import

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, repo_root / "lab" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        loaded.append(spec.name)
        spec.loader.exec_module(module)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)
    sys.path.remove(lab)


def _write_server_rounds(folder: Path, name: str, hybrid_fast_qps: list[float], bm25_qps=(1800.0, 3000.0, 2500.0)) -> None:
    """`folder/name.json` as lab/serve_threads.py writes it for an A/B server: bm25 and hybrid_fast
    taking turns, one round per QPS given (server CPU 0.5 and 0.9 ms a request)."""
    rows = []
    for bm25, fast in zip(bm25_qps, hybrid_fast_qps, strict=True):
        rows += [{"mode": "bm25", "qps": bm25, "failed": 0, "server_cpu_ms_per_request": 0.5},
                 {"mode": "hybrid_fast", "qps": fast, "failed": 0, "server_cpu_ms_per_request": 0.9}]
    (folder / f"{name}.json").write_text(json.dumps({"modes": rows}))


@pytest.fixture
def server_rounds():
    """write(folder, name, hybrid_fast_qps): a fake A/B server's serve_threads.py file (`_write_server_rounds`)."""
    return _write_server_rounds
