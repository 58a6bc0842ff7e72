"""What people decided about promotion, kept in the registry: <registry>/control.json.

    {"paused": {"at", "reason", "by"} | null,
     "rejected": {<content hash>: {"version", "rolled_back_at", "reason", "by"}}}

Two decisions outlive the command that made them:

- **A rollback stays.** `uniret rollback` records the content hash of the bundle it withdrew (the
  `bundle_hash` of its manifest, the hash promotion identifies content by). Promotion refuses that
  content, so a nightly that rebuilds the same bundle on unchanged data cannot undo the rollback;
  `uniret registry lift` lets it in again.
- **A pause.** `uniret registry pause` freezes every promotion (the nightly still trains, evaluates
  and reports); `uniret registry resume` ends it. Rollbacks stay possible while paused.

Written atomically (temp file + rename) under the registry lock, like the pointer; readers see the
old or the new file. A damaged file is an error naming it: promotion never guesses that nothing
was rejected.
"""

from __future__ import annotations

import getpass
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uniret.registry.errors import RegistryError
from uniret.registry.json_files import read_registry_json
from uniret.registry.layout import CONTROL
from uniret.registry.pointer import now_iso, registry_lock
from uniret.utils.files import atomic_write_json

HASH_SHOWN = 12  # hex digits of a content hash in messages
MIN_HASH_PREFIX = 8  # `lift` accepts a content hash prefix this long or longer


class PromotionHeld(RegistryError):
    """Promotion refused by a person's decision: the registry is paused, or the content was rolled back."""


@dataclass(frozen=True)
class Rejection:
    """Content withdrawn by a rollback: promotion refuses it until a person lifts it."""

    content_hash: str
    version: str  # the bundle version it was published as
    rolled_back_at: str  # UTC, as now_iso()
    reason: str = ""
    by: str = ""  # user@host of the rollback

    def describe(self) -> str:
        """One line for decisions and logs: which bundle, when, why, and how to lift it."""
        why = f" ({self.reason})" if self.reason else ""
        return (f"its content {self.content_hash[:HASH_SHOWN]} (bundle {self.version}) was rolled back at "
                f"{self.rolled_back_at}{why}; `uniret registry lift {self.version}` allows it again")


@dataclass(frozen=True)
class Control:
    """The registry's control state; the default (no file) is not paused, nothing rejected."""

    paused: bool = False
    paused_at: str | None = None
    reason: str | None = None  # why promotion is paused
    paused_by: str | None = None
    rejected: dict[str, Rejection] = field(default_factory=dict)  # content hash -> its rejection

    def pause_text(self) -> str:
        """'paused since <time> by <who> (<reason>)' for messages."""
        who = f" by {self.paused_by}" if self.paused_by else ""
        why = f" ({self.reason})" if self.reason else ""
        return f"promotion paused since {self.paused_at}{who}{why}; `uniret registry resume` ends the pause"

    def refusal(self, content_hash: str | None) -> str | None:
        """Why a bundle with `content_hash` may not be promoted now, or None when it may."""
        if self.paused:
            return self.pause_text()
        rejection = self.rejected.get(content_hash or "")
        return None if rejection is None else rejection.describe()

    def to_dict(self) -> dict[str, Any]:
        paused = {"at": self.paused_at, "reason": self.reason, "by": self.paused_by} if self.paused else None
        rejected = {h: {"version": r.version, "rolled_back_at": r.rolled_back_at, "reason": r.reason, "by": r.by}
                    for h, r in sorted(self.rejected.items())}
        return {"paused": paused, "rejected": rejected}


def actor() -> str:
    """user@host of whoever runs the command (recorded with a decision, for on-call)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container uid with no passwd entry and no $USER
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RegistryError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def _parse(data: Any, path: Path) -> Control:
    if not isinstance(data, dict):
        raise RegistryError(f"{path}: expected a JSON object")
    paused = data.get("paused")
    if paused is not None and not isinstance(paused, dict):
        raise RegistryError(f"{path}: field 'paused' must be null or an object")
    rejected_raw = data.get("rejected") or {}
    if not isinstance(rejected_raw, dict):
        raise RegistryError(f"{path}: field 'rejected' must be an object (content hash -> rejection)")
    rejected = {}
    for content_hash, entry in rejected_raw.items():
        where = f"{path}: rejected.{content_hash[:HASH_SHOWN]}"
        if not isinstance(entry, dict) or not isinstance(entry.get("version"), str):
            raise RegistryError(f"{where}: field 'version' missing or not a string")
        rejected[content_hash] = Rejection(content_hash, entry["version"],
                                           _text(entry.get("rolled_back_at"), f"{where}.rolled_back_at"),
                                           _text(entry.get("reason"), f"{where}.reason"),
                                           _text(entry.get("by"), f"{where}.by"))
    if paused is None:
        return Control(rejected=rejected)
    return Control(True, _text(paused.get("at"), f"{path}: paused.at") or None,
                   _text(paused.get("reason"), f"{path}: paused.reason") or None,
                   _text(paused.get("by"), f"{path}: paused.by") or None, rejected)


def read_control(root: str | Path) -> Control:
    """The registry's control state (the default when control.json is absent); RegistryError names
    a damaged file and the field."""
    path = Path(root) / CONTROL
    data = read_registry_json(path)
    return Control() if data is None else _parse(data, path)


def _write(root: Path, control: Control) -> Control:
    atomic_write_json(root / CONTROL, control.to_dict())
    return control


def _registry(root: str | Path) -> Path:
    root = Path(root)
    if not root.is_dir():
        raise RegistryError(f"{root}: registry not found")
    return root


def reject_locked(root: Path, content_hash: str, version: str, reason: str = "") -> Rejection:
    """Record `content_hash` (published as `version`) as rolled back now. Caller holds the registry lock."""
    current = read_control(root)
    rejection = Rejection(content_hash, version, now_iso(), reason, actor())
    _write(root, Control(current.paused, current.paused_at, current.reason, current.paused_by,
                         {**current.rejected, content_hash: rejection}))
    return rejection


def _match(control: Control, which: str) -> list[Rejection]:
    """Rejections named by a bundle version, a full content hash, or a hash prefix of MIN_HASH_PREFIX+ digits."""
    by_version = [r for r in control.rejected.values() if r.version == which]
    if by_version:
        return by_version
    if len(which) >= MIN_HASH_PREFIX:
        return [r for h, r in control.rejected.items() if h.startswith(which.lower())]
    return []


def lift(root: str | Path, which: str) -> Rejection:
    """Remove the rejection named by `which` (version or content hash); returns it. RegistryError
    when nothing or more than one rejection matches (nothing changes)."""
    root = _registry(root)
    with registry_lock(root):
        current = read_control(root)
        found = _match(current, which)
        if len(found) != 1:
            known = ", ".join(f"{r.version} ({h[:HASH_SHOWN]})" for h, r in sorted(current.rejected.items())) or "none"
            what = "no rejected bundle" if not found else f"{len(found)} rejected bundles"
            raise RegistryError(f"{root / CONTROL}: {what} match {which!r} (rejected: {known})")
        rest = {h: r for h, r in current.rejected.items() if h != found[0].content_hash}
        _write(root, Control(current.paused, current.paused_at, current.reason, current.paused_by, rest))
    return found[0]


def pause(root: str | Path, reason: str = "") -> tuple[Control, bool]:
    """Pause promotion; returns (state, changed). Pausing a paused registry changes nothing (its
    first time, reason and author stay)."""
    root = _registry(root)
    with registry_lock(root):
        current = read_control(root)
        if current.paused:
            return current, False
        return _write(root, Control(True, now_iso(), reason or None, actor(), current.rejected)), True


def resume(root: str | Path) -> tuple[Control, Control]:
    """End a pause; returns (state before, state after). Resuming a registry that is not paused changes nothing."""
    root = _registry(root)
    with registry_lock(root):
        current = read_control(root)
        if not current.paused:
            return current, current
        return current, _write(root, Control(rejected=current.rejected))
