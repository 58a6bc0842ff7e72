"""The training checkpoint a bundle was built from, published with it as <bundle>/checkpoint/.

A bundle serves ONNX graphs, which no training stage can continue. With the checkpoint beside them
the registry's production is also where the next training starts: `training.<stage>.start_model:
production` warm-starts from the checkpoint of the bundle production serves (issue 56: the nightly
that learns from clicks continues production's model, not the one last trained: a blocked candidate
never becomes the next night's start, and after a rollback the next night continues the restored one).

The checkpoint is an attachment: checksummed with the bundle (serving, rollback and the warm start
verify it), outside the bundle's content hash, which stays the index stage's.
"""

from __future__ import annotations

from pathlib import Path

from uniret.registry.integrity import verified_bundle
from uniret.registry.pointer import read_pointer
from uniret.utils.files import hash_path

CHECKPOINT_DIR = "checkpoint"  # <bundle>/checkpoint/: a models.factory checkpoint folder
PRODUCTION = "production"  # training.<stage>.start_model: production's checkpoint, from the registry


def checkpoint_attachment(model_info: dict, model_dir: str | Path) -> tuple[dict[str, Path], str | None]:
    """({CHECKPOINT_DIR: model_dir}, None) when `model_dir` is the checkpoint a bundle was built from
    (`model_info`: its manifest's `model`, whose `checkpoint_sha256` the index stage records); else
    ({}, why not). A training stage that ran again after the index stage left another model there."""
    model_dir = Path(model_dir)
    expected = model_info.get("checkpoint_sha256")
    if not expected:
        return {}, "the bundle's manifest records no checkpoint sha256"
    if not model_dir.is_dir():
        return {}, f"{model_dir} is missing"
    if hash_path(model_dir) != expected:
        return {}, f"{model_dir} is not the checkpoint the bundle was built from (its sha256 differs)"
    return {CHECKPOINT_DIR: model_dir}, None


def production_checkpoint(root: str | Path) -> tuple[Path | None, str]:
    """(production's checkpoint folder, its version) or (None, why there is none: no production bundle,
    or one published without its checkpoint). A bundle that fails its checksums raises IntegrityError:
    never train on a damaged checkpoint."""
    root = Path(root)
    pointer = read_pointer(root)
    if pointer is None:
        return None, f"no production bundle in {root}"
    bundle = verified_bundle(root / pointer["bundle"], root, "not warm-started from")
    folder = bundle / CHECKPOINT_DIR
    if not folder.is_dir():
        return None, f"production {pointer['version']} was published without its checkpoint"
    return folder, str(pointer["version"])
