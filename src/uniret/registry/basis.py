"""What a bundle's stored evaluation was measured on, and whether a candidate's is the same.

The gate compares the candidate's scores with the scores production was promoted with. Those are
comparable only when both were measured on the same judged queries and documents: the same
dataset files (the validate stage's input hash per dataset), split, slice and identical-id rule.
Promotion stores this basis in the bundle's lineage; the gate re-scores production on the
candidate's data when the two bases differ (gate.rescore_production).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from uniret.config.params import Params
from uniret.core.jsonio import read_json

VALIDATE_MANIFEST = "manifest.json"  # its `inputs`: {dataset: hash of the raw dataset files}


def evaluation_basis(params: Params, validate_dir: Path | None) -> dict[str, Any]:
    """The basis of this run's evaluation: per eval dataset its files' hash (None when the validate
    stage recorded none), and the split, slice and identical-id rule every dataset was scored with."""
    data, evaluate = params.section("data"), params.section("evaluate")
    hashes: dict[str, Any] = {}
    manifest = None if validate_dir is None else Path(validate_dir) / VALIDATE_MANIFEST
    if manifest is not None and manifest.is_file():
        hashes = read_json(manifest).get("inputs") or {}
    return {
        "split": data.eval_split,
        "slice": asdict(data.slice),
        "ignore_identical_ids": evaluate.ignore_identical_ids,
        "datasets": {name: hashes.get(name) for name in data.eval_datasets},
    }


def basis_differences(stored: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """Why scores measured on `stored` cannot stand for `current`, one line each; empty: comparable."""
    if not stored:
        return ["production's manifest records no evaluation basis (promoted before uniret stored one)"]
    out = [f"{key}: {stored.get(key)!r} then, {current[key]!r} now"
           for key in ("split", "slice", "ignore_identical_ids") if stored.get(key) != current[key]]
    then = stored.get("datasets") or {}
    for name, digest in current["datasets"].items():
        if digest is None:
            out.append(f"{name}: this run's validate stage recorded no hash of its files")
        elif name not in then:
            out.append(f"{name}: not among the datasets production was evaluated on")
        elif then[name] != digest:
            out.append(f"{name}: its files changed since production was evaluated")
    return out
