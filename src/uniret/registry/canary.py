"""The canary's state in the registry: <registry>/canary.json.

    {"status": "running" | "promoted" | "rolled_back" | "abandoned",
     "id", "candidate": version, "production": the version it is compared with, "started_at",
     "deadline", "share", "min_impressions", "rule", "alpha", "by",
     "decided_at", "reason", "preference": {...} (once decided),
     "history": [earlier canaries, newest first, without their history]}

A canary starts by publishing the candidate into bundles/ (production does not move) and writing
this file; serving reads it (at start-up, on POST /admin/canary and with the pointer watch) and
interleaves the candidate with production for `share` of the searches. It ends in one of three ways,
each under the registry lock and recorded here with its reason:
  promoted     the pointer moves to the candidate (like `uniret promote`, the reason in the pointer);
  rolled_back  production stays; the candidate's content is recorded as rejected (control.json), so
               the next nightly cannot propose it again until `uniret registry lift`;
  abandoned    production stays, nothing is rejected (`uniret canary stop`, or production moved
               under the canary, which made its comparison moot).
A crash of the server mid-canary changes nothing here: the canary resumes when a server reads the
file again, and production serves throughout.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from uniret.config.canary import CanaryConfig
from uniret.registry import bundles
from uniret.registry.control import PromotionHeld, actor, read_control, reject_locked
from uniret.registry.errors import RegistryError
from uniret.registry.json_files import read_registry_json
from uniret.registry.layout import BUNDLES, CANARY
from uniret.registry.pointer import now_iso, point_to, read_pointer, registry_lock
from uniret.utils.files import atomic_write_json, hash_path

RUNNING, PROMOTED, ROLLED_BACK, ABANDONED = "running", "promoted", "rolled_back", "abandoned"
ENDINGS = {"promote": PROMOTED, "rollback": ROLLED_BACK, "abandon": ABANDONED}


def read_canary(root: str | Path) -> dict[str, Any] | None:
    """The canary file, or None when no canary ever ran; a damaged file is an error naming it."""
    path = Path(root) / CANARY
    data = read_registry_json(path, "not a canary file: ")
    if data is None:
        return None
    for name in ("status", "candidate", "production"):
        if not isinstance(data, dict) or not isinstance(data.get(name), str):
            raise RegistryError(f"{path}: field {name!r} missing or not a string")
    data.setdefault("history", [])
    return data


def running(root: str | Path) -> dict[str, Any] | None:
    """The running canary, or None."""
    state = read_canary(root)
    return state if state is not None and state["status"] == RUNNING else None


def expired(state: dict[str, Any], now: datetime | None = None) -> bool:
    """The canary's deadline has passed."""
    now = now or datetime.now(UTC)
    return now >= datetime.fromisoformat(state["deadline"].replace("Z", "+00:00"))


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def start(root: str | Path, source: str | Path, cfg: CanaryConfig, *, evaluation: dict[str, Any] | None,
          decision: dict[str, Any] | None, lineage: dict[str, Any],
          attachments: dict[str, Path] | None = None) -> dict[str, Any]:
    """Publish bundle folder `source` (or find it published; a published folder of this registry is its
    version) and start its canary against production.

    Refused (nothing written) with no production, while paused, for rejected content, for content
    that already is production, and while another canary runs (`uniret canary stop` ends it).
    `attachments`: published with the bundle (bundles.publish), e.g. its per-query evaluation.
    """
    root = Path(root)
    # a bundle this registry published already (e.g. the previous production) is known by its recorded hash:
    # publishing added its manifest fields and checksums, so the folder's own hash differs
    published = Path(source).resolve().parent == (root / BUNDLES).resolve()
    content_hash = (bundles.read_manifest(source).get("bundle_hash") if published else None) or hash_path(source)
    with registry_lock(root):
        pointer = read_pointer(root)
        if pointer is None:
            raise RegistryError(f"{root}: no production bundle: a canary compares with production "
                                "(`uniret promote` the first bundle)")
        current = running(root)
        if current is not None:
            raise RegistryError(f"{root / CANARY}: canary of {current['candidate']} still running since "
                                f"{current['started_at']}; `uniret canary decide` or `uniret canary stop` ends it")
        refusal = read_control(root).refusal(content_hash)
        if refusal is not None:
            raise PromotionHeld(f"{root}: no canary: {refusal}")
        version = bundles.find_by_hash(root, content_hash)
        if version == pointer["version"]:
            raise RegistryError(f"{root}: the candidate's content already is production ({version}): nothing to try")
        if version is None:
            version = bundles.publish(root, source, evaluation=evaluation, decision=decision,
                                      lineage={**lineage, "parent": pointer["version"], "canary": True},
                                      content_hash=content_hash, attachments=attachments)
        began = datetime.now(UTC)
        previous = read_canary(root)
        state = {
            "status": RUNNING, "id": f"{_stamp(began)}-{version}", "candidate": version,
            "candidate_bundle": f"{BUNDLES}/{version}", "production": pointer["version"],
            "started_at": _stamp(began), "deadline": _stamp(began + timedelta(hours=cfg.max_hours)),
            "share": cfg.share, "min_impressions": cfg.min_impressions, "rule": cfg.rule, "alpha": cfg.alpha,
            "by": actor(),
            "history": ([_entry(previous)] + previous["history"]) if previous else [],
        }
        atomic_write_json(root / CANARY, state)
    return state


def _entry(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k != "history"}


def finish(root: str | Path, action: str, reason: str, preference: dict[str, Any] | None = None) -> dict[str, Any]:
    """End the running canary: `action` promote, rollback or abandon (module doc); returns the new state.

    A promotion while the registry is paused (or of content rejected meanwhile) raises PromotionHeld
    and the canary keeps running; a production that moved under the canary turns any action into
    abandoned (its comparison no longer holds).
    """
    if action not in ENDINGS:
        raise ValueError(f"action must be one of {', '.join(ENDINGS)}, got {action!r}")
    root = Path(root)
    with registry_lock(root):
        state = running(root)
        if state is None:
            raise RegistryError(f"{root / CANARY}: no canary is running")
        pointer = read_pointer(root)
        status = ENDINGS[action]
        if pointer is None or pointer["version"] != state["production"]:
            now = pointer["version"] if pointer else "nothing"
            status, reason = ABANDONED, (f"production moved from {state['production']} to {now} during the canary; "
                                         f"not {action}d ({reason})")
        content_hash = bundles.read_manifest(root / BUNDLES / state["candidate"]).get("bundle_hash")
        if status == PROMOTED:
            refusal = read_control(root).refusal(content_hash)
            if refusal is not None:
                raise PromotionHeld(f"{root}: canary decided promote, held: {refusal}; the canary keeps running")
            point_to(root, state["candidate"], frozenset({state["production"]}), reason=f"canary: {reason}")
        elif status == ROLLED_BACK and isinstance(content_hash, str):
            reject_locked(root, content_hash, state["candidate"], f"canary: {reason}")
        state = {**state, "status": status, "decided_at": now_iso(), "reason": reason, "decided_by": actor(),
                 "preference": preference}
        atomic_write_json(root / CANARY, state)
    return state
