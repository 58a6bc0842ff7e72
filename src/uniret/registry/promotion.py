"""Promotion and rollback: publish, flip the production pointer, apply retention, push the registry,
tell serving.

A rollback records the withdrawn bundle's content as rejected, and promotion refuses rejected
content and any content while the registry is paused (uniret.registry.control), both decided
under the same lock as the flip.

The pointer flip is the commit point. Retention (registry.keep_history), `dvc push` and the reload
call come after it: when any fails, the result says so and the promotion (or rollback) stands.
`on_change(bundle folder)` runs right after the flip, under the same lock, so that an engine's
serving alias (uniret.milvus) moves in the same order as the pointer; its failure is reported too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uniret.registry import bundles
from uniret.registry.control import PromotionHeld, read_control, reject_locked
from uniret.registry.dvc_sync import push_registry
from uniret.registry.errors import RegistryError
from uniret.registry.integrity import require_sound_entries
from uniret.registry.layout import BUNDLES
from uniret.registry.notify import NotifyResult, notify_reload
from uniret.registry.pointer import PROMOTE_HINT, point_back, point_to, read_pointer, registry_lock
from uniret.registry.retention import prune_locked
from uniret.utils.files import hash_path

log = logging.getLogger("uniret.registry")


@dataclass
class Serving:
    """How to reach the server after a pointer change (all optional: no URL means no call)."""

    url: str | None = None
    token: str | None = None
    timeout_s: float = 10.0


@dataclass
class PromotionResult:
    """What a promote or rollback did."""

    action: str  # "promote" or "rollback"
    version: str
    previous: str | None
    published: bool  # a new bundle folder was created (False: it was already in the registry)
    changed: bool  # the pointer moved (False: the bundle already was production)
    pointer: dict[str, Any]
    dvc: str
    notify: NotifyResult = field(default_factory=lambda: NotifyResult("skipped", "not attempted"))
    pruned: list[str] = field(default_factory=list)  # bundles deleted by retention (registry.keep_history)
    retention: str = "not attempted"  # what retention did, or why it did not
    engine: str = "not configured"  # what on_change did (the Milvus alias), or why it failed
    # a rollback: the withdrawn content recorded as rejected (promotion refuses it), or why not
    rejected: str = "not applicable"

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "notify"}
        return {**out, "notify": self.notify.to_dict()}


# an engine's move to a new production bundle (its folder); returns what it did
OnChange = Callable[[Path], str]


def _engine_change(on_change: OnChange | None, root: Path, version: str) -> str:
    """Run `on_change` on the bundle now production (caller holds the lock); a failure is reported."""
    if on_change is None:
        return "not configured"
    try:
        return on_change(bundles.bundle_dir(root, version))
    except Exception as exc:  # noqa: BLE001 - the pointer flip stands; the result says what failed
        log.error("engine update after the pointer flip failed (the flip stands): %s", exc)
        return f"failed: {exc}"


def _after_change(root: Path, version: str, serving: Serving, dvc_push: bool) -> tuple[str, NotifyResult]:
    dvc = push_registry(root) if dvc_push else "skipped: registry.dvc_push is false"
    return dvc, notify_reload(serving.url, serving.token, version, serving.timeout_s)


def promote(
    root: str | Path,
    source: str | Path,
    *,
    evaluation: dict[str, Any] | None,
    decision: dict[str, Any] | None,
    lineage: dict[str, Any],
    serving: Serving | None = None,
    version: str | None = None,
    dvc_push: bool = True,
    keep_history: int | None = None,
    attachments: dict[str, Path] | None = None,
    on_change: OnChange | None = None,
    while_paused: bool = False,
    reason: str | None = None,
) -> PromotionResult:
    """Publish bundle folder `source` (unless identical content is already published) and make it production.

    The lineage's `parent` is set to the production version found under the registry lock.
    Promoting content that already is production changes nothing (idempotent reruns). A current
    production that is not a published bundle passing verification is refused before anything is
    published (it would enter the rollback history). PromotionHeld (nothing changes) while the
    registry is paused or when a rollback rejected this content (uniret.registry.control).
    `keep_history`: after the flip, under the same lock, delete every bundle but production and
    that many of its rollback history (uniret.registry.retention); None keeps every bundle.
    `attachments`: folders published with the bundle (bundles.publish).
    `on_change`: see the module doc (also run when the bundle already is production, so a re-run
    repairs an engine alias that a failed run left behind).
    `while_paused`: promote though the registry is paused (a corpus refresh of production's own
    model, params nightly.refresh_corpus); a rejection still refuses. `reason`: recorded in the
    pointer (e.g. "corpus refresh of <version>").
    """
    root, serving = Path(root), serving or Serving()
    root.mkdir(parents=True, exist_ok=True)
    content_hash = hash_path(source)
    with registry_lock(root):
        current = read_pointer(root)
        previous = current["version"] if current else None
        if current is not None:
            require_sound_entries(root, [current], "promote over the current production", PROMOTE_HINT)
        existing = bundles.find_by_hash(root, content_hash)
        if existing is not None and existing == previous:
            log.info("bundle %s (same content) already is production: nothing to promote", existing)
            return PromotionResult("promote", existing, previous, False, False, current, "skipped: no change",
                                   engine=_engine_change(on_change, root, existing))
        control = read_control(root)
        rejection = control.rejected.get(content_hash)
        refusal = (rejection.describe() if rejection is not None else None) if while_paused \
            else control.refusal(content_hash)
        if refusal is not None:
            raise PromotionHeld(f"{root}: not promoted: {refusal}")
        published = existing is None
        if published:
            existing = bundles.publish(root, source, evaluation=evaluation, decision=decision,
                                       lineage={**lineage, "parent": previous}, version=version,
                                       content_hash=content_hash, attachments=attachments)
        checked = frozenset(v for v in (previous, existing) if v)
        pointer = point_to(root, existing, checked - {existing}, **({"reason": reason} if reason else {}))
        engine = _engine_change(on_change, root, existing)
        pruned, retention = _retain(root, keep_history, checked)
        if keep_history is not None:
            pointer = read_pointer(root) or pointer  # retention may have trimmed the history
    log.info("production: %s -> %s (retention: %s)", previous, existing, retention)
    dvc, notified = _after_change(root, existing, serving, dvc_push)
    return PromotionResult("promote", existing, previous, published, True, pointer, dvc, notified, pruned, retention,
                           engine)


def _retain(root: Path, keep_history: int | None, verified: frozenset[str]) -> tuple[list[str], str]:
    """Prune after a flip (caller holds the lock); a failure is reported, the promotion stands."""
    if keep_history is None:
        return [], "skipped: registry.keep_history is null (every bundle kept)"
    try:
        deleted = prune_locked(root, keep_history, verified=verified).deleted
    except (OSError, RegistryError) as exc:
        log.error("retention after promotion failed (the promotion stands): %s", exc)
        return [], f"failed: {exc}"
    return deleted, f"kept production + {keep_history} of its history, deleted {len(deleted)}"


def _reject_withdrawn(root: Path, version: str, reason: str) -> str:
    """Record the withdrawn bundle's content as rejected (caller holds the lock); what was recorded or why not."""
    try:
        content_hash = bundles.read_manifest(root / BUNDLES / version).get("bundle_hash")
    except RegistryError as exc:
        content_hash, why = None, str(exc)
    else:
        why = "its manifest records no bundle_hash"
    if not isinstance(content_hash, str) or not content_hash:
        log.warning("rollback: %s not recorded as rejected: %s", version, why)
        return f"not recorded: {why}"
    try:
        rejection = reject_locked(root, content_hash, version, reason)
    except (OSError, RegistryError) as exc:  # the rollback itself stands: it is what on-call needed
        log.error("rollback: %s not recorded as rejected (the rollback stands): %s", version, exc)
        return f"failed: {exc}"
    return f"content {content_hash[:12]} of {version} at {rejection.rolled_back_at}"


def rollback(root: str | Path, *, serving: Serving | None = None, dvc_push: bool = True,
             on_change: OnChange | None = None, reason: str = "") -> PromotionResult:
    """Restore the previous production bundle and record the withdrawn bundle's content as rejected
    (with `reason`), so promotion refuses it until `uniret registry lift`; a clear RegistryError
    when there is no previous bundle. `on_change`: as for `promote`, on the restored bundle."""
    root, serving = Path(root), serving or Serving()
    if not root.is_dir():
        raise RegistryError(f"{root}: registry not found: nothing to roll back")
    with registry_lock(root):
        pointer, withdrawn = point_back(root)
        # under the same lock as the flip: no promotion can slip in between and re-promote it
        rejected = _reject_withdrawn(root, withdrawn["version"], reason)
        engine = _engine_change(on_change, root, pointer["version"])
    log.info("rolled back production: %s -> %s (rejected: %s)", withdrawn["version"], pointer["version"], rejected)
    dvc, notified = _after_change(root, pointer["version"], serving, dvc_push)
    return PromotionResult("rollback", pointer["version"], withdrawn["version"], False, True, pointer, dvc, notified,
                           engine=engine, rejected=rejected)
