"""Fixtures of the lab scripts' tests: a script of lab/ imported as a module."""

from __future__ import annotations

import importlib.util
import sys

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
