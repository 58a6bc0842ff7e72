"""Lazy package exports: `uniret.<package>.<Name>` imports the submodule that defines it on first use,
so importing a package (e.g. for `uniret --help`) loads no torch, faiss or JVM."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` resolving each name of `exports` ({name: submodule}) from `package.<submodule>`."""

    def __getattr__(name: str) -> Any:
        submodule = exports.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{submodule}"), name)

    return __getattr__
