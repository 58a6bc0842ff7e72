"""Training checkpoints: atomic writes, keep-last-K, latest lookup, loading.

A checkpoint is one file `<dir>/step-XXXXXXXX.pt` holding the model, optimizer and scheduler
states, every RNG state, the step, the data source position and the loop's logging window,
i.e. everything a resumed run needs to continue bit-exactly. It is written to a hidden temp
file and renamed, so a crash mid-write never leaves a truncated checkpoint under a real name.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

import torch

from uniret.core.errors import CheckpointError
from uniret.utils.files import atomic_open
from uniret.utils.text import excerpt

log = logging.getLogger("uniret.training")

PATTERN = re.compile(r"^step-(\d+)\.pt$")
FORMAT_VERSION = 1


def checkpoint_name(step: int) -> str:
    return f"step-{step:08d}.pt"


def list_checkpoints(directory: str | os.PathLike) -> list[tuple[int, Path]]:
    """(step, path) of the complete checkpoints in `directory`, oldest first (temp files ignored)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = PATTERN.match(path.name)
        if match and path.is_file():
            found.append((int(match.group(1)), path))
    return sorted(found)


def latest_checkpoint(directory: str | os.PathLike) -> Path | None:
    """The newest checkpoint in `directory`, or None."""
    found = list_checkpoints(directory)
    return found[-1][1] if found else None


def save_checkpoint(directory: str | os.PathLike, step: int, state: dict[str, Any], keep: int) -> Path:
    """Atomically write `state` as the checkpoint of `step`, then delete all but the last `keep`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / checkpoint_name(step)
    with atomic_open(path, "wb") as fh:
        torch.save({"format": FORMAT_VERSION, "step": step, **state}, fh)
    prune_checkpoints(directory, keep)
    log.info("checkpoint step %d -> %s", step, path)
    return path


def prune_checkpoints(directory: str | os.PathLike, keep: int) -> list[Path]:
    """Delete all but the newest `keep` checkpoints; return the deleted paths."""
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    found = list_checkpoints(directory)
    doomed = [path for _, path in found[:-keep]]
    for path in doomed:
        path.unlink(missing_ok=True)
    return doomed


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint written by `save_checkpoint` (tensors and plain values only)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: checkpoint not found")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # a truncated or foreign file: say which one
        raise CheckpointError(
            f"{path}: not a readable uniret checkpoint ({type(exc).__name__}: {excerpt(str(exc))}); delete it "
            "to resume from the previous one, or set training.<stage>.resume: false to start over"
        ) from exc
    if not isinstance(state, dict) or state.get("format") != FORMAT_VERSION:
        raise CheckpointError(f"{path}: not a uniret training checkpoint (format {FORMAT_VERSION})")
    return state


def load_model_weights(path: str | os.PathLike, model: torch.nn.Module) -> int:
    """Load only the model weights of a checkpoint into `model`; return the checkpoint's step."""
    state = load_checkpoint(path)
    model.load_state_dict(state["model"])
    return int(state["step"])
