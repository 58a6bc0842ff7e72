"""The production pointer: <registry>/production.json names the live bundle and keeps history.

{"version", "bundle" (path relative to the registry), "promoted_at", "history": [older entries,
newest first]}. Every change writes a temp file and renames it over the old pointer (atomic on
POSIX), so readers (serving watches this file) see the old or the new pointer, never half of one.
Changes are serialised by a lock file so a promotion and a rollback cannot interleave.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from uniret.registry.errors import RegistryError
from uniret.registry.integrity import VERIFY_HINT, require_sound_entries, verify_published
from uniret.registry.json_files import read_registry_json
from uniret.registry.layout import BUNDLES, POINTER
from uniret.utils.files import atomic_write_json
from uniret.utils.locks import file_lock

LOCK = ".registry.lock"
# what to do when the production a promotion would push into the rollback history is broken
PROMOTE_HINT = f"`uniret rollback` withdraws a broken production, or repair {POINTER} by hand; {VERIFY_HINT}"


def now_iso() -> str:
    """UTC time stamp used in pointers and manifests."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@contextmanager
def registry_lock(root: str | Path) -> Iterator[None]:
    """Serialise pointer changes of one registry across processes."""
    with file_lock(Path(root) / LOCK):
        yield


def read_pointer(root: str | Path) -> dict[str, Any] | None:
    """The current pointer, or None when nothing was ever promoted (cold start)."""
    path = Path(root) / POINTER
    data = read_registry_json(path)
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("version"), str):
        raise RegistryError(f"{path}: field 'version' missing or not a string")
    data.setdefault("history", [])
    if not isinstance(data["history"], list):
        raise RegistryError(f"{path}: field 'history' is not a list")
    return data


def _entry(pointer: dict[str, Any]) -> dict[str, Any]:
    """A pointer without its history: what goes into the next pointer's history."""
    return {k: v for k, v in pointer.items() if k != "history"}


def point_to(root: str | Path, version: str, verified: frozenset[str] = frozenset(), **extra: Any) -> dict[str, Any]:
    """Make `version` production; the previous pointer is pushed onto the history. Caller holds the lock.

    The previous production must be a published bundle that verifies (as `registry verify` checks
    it), else RegistryError and nothing changes: a dangling or damaged entry never enters the
    rollback history. `verified`: versions the caller checked already under the same lock.
    """
    root = Path(root)
    bundle = f"{BUNDLES}/{version}"
    if not (root / bundle).is_dir():
        raise RegistryError(f"{root / bundle}: bundle {version!r} is not in the registry")
    old = read_pointer(root)
    if old is not None:
        require_sound_entries(root, [old], f"make {version!r} production over it", PROMOTE_HINT, verified)
    verify_published(root / bundle)  # production never names a bundle that fails its checksums
    history = ([_entry(old)] + old["history"]) if old else []
    new = {"version": version, "bundle": bundle, "promoted_at": now_iso(), **extra, "history": history}
    atomic_write_json(root / POINTER, new)
    return new


def point_back(root: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Restore the previous production bundle; returns (new pointer, the entry rolled back from).

    The rolled-back entry is NOT pushed onto the history: a second rollback goes further back
    instead of returning to the bundle that was just withdrawn. Caller holds the lock.
    """
    root = Path(root)
    old = read_pointer(root)
    if old is None:
        raise RegistryError(f"{root / POINTER}: no production bundle: nothing to roll back")
    if not old["history"]:
        raise RegistryError(
            f"{root / POINTER}: production {old['version']!r} has no previous bundle in its history: "
            "nothing to roll back to"
        )
    previous, rest = old["history"][0], old["history"][1:]
    # the withdrawn production is not kept, so a dangling one may be rolled back from (a repair)
    require_sound_entries(root, [previous], "roll back to the previous bundle")
    version = previous["version"]
    new = {
        "version": version,
        "bundle": f"{BUNDLES}/{version}",
        "promoted_at": now_iso(),
        "rolled_back_from": old["version"],
        "history": rest,
    }
    atomic_write_json(root / POINTER, new)
    return new, _entry(old)
