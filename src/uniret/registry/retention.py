"""Retention: the registry keeps production and the bundles its rollback history can reach, up to
`keep_history` of them; every other published bundle is deleted and the pointer's history trimmed
to the kept ones (so `uniret registry verify` and `uniret rollback` stay whole).

Before anything is deleted, the entries to keep are checked as `uniret registry verify` checks
them (published, checksums intact): a pointer naming a missing or damaged bundle is refused, so a
prune never leaves the registry without a servable bundle. A folder under bundles/ that uniret
did not write (uniret.utils.owned) is left alone and reported.

Order makes a crash harmless: the trimmed pointer is written first (atomically), then each bundle
is renamed aside (`.pruned-<version>-*`, which no listing reads) and removed; leftovers of a killed
prune are removed by the next one.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from uniret.registry.errors import RegistryError
from uniret.registry.integrity import VERIFY_HINT, require_sound_entries
from uniret.registry.pointer import BUNDLES, POINTER, read_pointer, registry_lock
from uniret.utils.files import atomic_write_json
from uniret.utils.owned import written_by_uniret

log = logging.getLogger("uniret.registry")

PRUNED_PREFIX = ".pruned-"  # a bundle folder being removed
PRUNE_HINT = f"prune deletes every bundle it does not keep: roll back or repair {POINTER} first; {VERIFY_HINT}"


@dataclass
class PruneResult:
    """What a prune kept and deleted (or would, with dry_run)."""

    kept: list[str]  # production first, then the history it keeps, newest first
    deleted: list[str] = field(default_factory=list)
    history_dropped: int = 0  # pointer history entries beyond keep_history
    dry_run: bool = False
    left_alone: list[str] = field(default_factory=list)  # folders under bundles/ that uniret did not write


def _published(root: Path) -> list[str]:
    folder = root / BUNDLES
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _remove(root: Path, version: str) -> None:
    """Rename the bundle aside, then delete it: no half-deleted bundle is ever listed."""
    src = root / BUNDLES / version
    aside = root / BUNDLES / f"{PRUNED_PREFIX}{version}-{os.getpid()}"
    os.rename(src, aside)
    shutil.rmtree(aside)


def prune_locked(root: str | Path, keep_history: int, dry_run: bool = False,
                 verified: frozenset[str] = frozenset()) -> PruneResult:
    """Prune with the registry lock already held (promotion prunes right after its pointer flip;
    `verified`: the versions it checked already)."""
    if isinstance(keep_history, bool) or not isinstance(keep_history, int) or keep_history < 0:
        raise RegistryError(f"keep_history must be a whole number >= 0, got {keep_history!r}")
    root = Path(root)
    pointer = read_pointer(root)
    if pointer is None:
        raise RegistryError(f"{root / POINTER}: no production bundle: refusing to prune a registry with nothing to keep")
    history = pointer["history"]
    require_sound_entries(root, [pointer, *history[:keep_history]], "prune", PRUNE_HINT, verified)
    kept = [pointer["version"], *(entry["version"] for entry in history[:keep_history])]
    others = [v for v in _published(root) if v not in kept]
    foreign = [v for v in others if not written_by_uniret(root / BUNDLES / v)]
    result = PruneResult(kept=kept, deleted=[v for v in others if v not in foreign],
                         history_dropped=max(0, len(history) - keep_history), dry_run=dry_run, left_alone=foreign)
    if foreign:
        log.warning("prune: left alone %s under %s: not bundles uniret published", ", ".join(foreign), root / BUNDLES)
    if dry_run:
        return result
    if result.history_dropped:
        atomic_write_json(root / POINTER, {**pointer, "history": history[:keep_history]})
    for leftover in (root / BUNDLES).glob(f"{PRUNED_PREFIX}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    for version in result.deleted:
        _remove(root, version)
        log.info("pruned bundle %s", version)
    return result


def prune(root: str | Path, keep_history: int, dry_run: bool = False) -> PruneResult:
    """Keep production and the first `keep_history` bundles of its rollback history; delete the rest."""
    root = Path(root)
    if not root.is_dir():
        raise RegistryError(f"{root}: registry not found: nothing to prune")
    with registry_lock(root):
        return prune_locked(root, keep_history, dry_run)
