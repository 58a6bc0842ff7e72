"""Seeding and RNG state capture, so a run (and a resumed run) is reproducible."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import torch

# cuBLAS needs this workspace setting for deterministic GEMMs on CUDA (harmless on CPU).
_CUBLAS_DETERMINISTIC = ":4096:8"


def seed_everything(seed: int, deterministic: bool = True) -> None:
    """Seed python, numpy and torch (all devices); optionally ask torch for deterministic kernels.

    `deterministic` sets process-wide torch flags (use_deterministic_algorithms with warn_only, so
    an op without a deterministic kernel warns instead of failing; cuDNN benchmark off).
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", _CUBLAS_DETERMINISTIC)
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False


def capture_rng_state() -> dict[str, Any]:
    """All RNG states as plain Python values and tensors (loadable with torch.load weights_only)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {"kind": kind, "keys": keys.tolist(), "pos": int(pos), "has_gauss": int(has_gauss),
                  "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Restore states captured by `capture_rng_state` (the CUDA part only when CUDA is present)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    npst = state["numpy"]
    np.random.set_state(
        (npst["kind"], np.asarray(npst["keys"], dtype=np.uint32), npst["pos"], npst["has_gauss"],
         npst["cached_gaussian"])
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
