"""Temporarily set environment variables and restore them exactly (unset ones are unset again)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def temporary_env(updates: Mapping[str, str | None]) -> Iterator[None]:
    """Set each variable whose value is not None for the block, then restore the previous state."""
    saved = {key: os.environ.get(key) for key in updates}
    try:
        for key, value in updates.items():
            if value is not None:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
