"""Lineage of a bundle: which data, params, parent bundle and code produced it, and what data its
stored evaluation was measured on (uniret.registry.basis)."""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
from pathlib import Path
from typing import Any

from uniret.config.params import SECTIONS, Params
from uniret.registry.basis import evaluation_basis
from uniret.utils.files import hash_path

log = logging.getLogger("uniret.registry")

# Sections that do not shape the bundle's content (where it goes, how it is judged or reported).
NON_MODEL_SECTIONS = frozenset({"gate", "registry", "report", "nightly"})
GIT_TIMEOUT_S = 10


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def data_version(validate_dir: Path | None) -> str | None:
    """Hash of the validate stage's recorded inputs/outputs (its validated snapshots if none recorded)."""
    if validate_dir is None or not (validate_dir / "manifest.json").is_file():
        return None
    manifest = json.loads((validate_dir / "manifest.json").read_text(encoding="utf-8"))
    recorded = {"inputs": manifest.get("inputs") or {}, "outputs": manifest.get("outputs") or {}}
    if not recorded["inputs"] and not recorded["outputs"] and (validate_dir / "datasets").is_dir():
        recorded["outputs"] = {"datasets": hash_path(validate_dir / "datasets")}
    return _digest(recorded)


def params_hash(params: Params) -> str:
    """Hash of the profile-resolved sections that shape the bundle."""
    names = sorted(n for n in params.raw if n in SECTIONS and n not in NON_MODEL_SECTIONS)
    return _digest({"profile": params.profile, **{n: params.resolved(n) for n in names}})


def git_commit(cwd: Path) -> str | None:
    """HEAD of the git checkout at `cwd`, or None outside git (the bundle then says so)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                             timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("no git commit for lineage: %s", exc)
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def build_lineage(params: Params, validate_dir: Path | None, parent: str | None, repo: Path) -> dict[str, Any]:
    """The lineage block stored in a published bundle's manifest."""
    return {
        "data_version": data_version(validate_dir),
        "params_hash": params_hash(params),
        "profile": params.profile,
        "parent": parent,
        "git_commit": git_commit(repo),
        "evaluation_basis": evaluation_basis(params, validate_dir),
    }
