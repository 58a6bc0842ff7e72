"""Errors of registry operations (a user error: printed as one clear line by the CLI)."""

from __future__ import annotations

from uniret.core.errors import StageFailed


class RegistryError(StageFailed):
    """A registry operation cannot proceed (no production bundle, no history, version taken, ...)."""
