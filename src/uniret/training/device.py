"""Device and mixed-precision choice: CUDA with bf16 autocast when present, plain fp32 on CPU."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class DevicePlan:
    """Where the loop runs and whether it autocasts (and to which dtype)."""

    device: torch.device
    autocast_dtype: torch.dtype | None  # None: no autocast

    def autocast(self) -> contextlib.AbstractContextManager:
        """Autocast context for the forward pass and loss (a no-op when AMP is off)."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)

    def describe(self) -> str:
        amp = str(self.autocast_dtype).replace("torch.", "") if self.autocast_dtype else "off"
        return f"{self.device} (amp: {amp})"


def plan_device(device: str = "auto", amp: str = "auto") -> DevicePlan:
    """Pick the device ("auto": CUDA if available) and the autocast dtype.

    amp "auto" means bf16 on CUDA and none on CPU (CPU bf16 autocast is slow on most CPUs and
    changes numerics, so it only happens when configured with amp "bf16").
    """
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but CUDA is not available")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if amp == "off":
        dtype = None
    elif amp == "bf16":
        dtype = torch.bfloat16
    elif amp == "auto":
        dtype = torch.bfloat16 if dev.type == "cuda" else None
    else:
        raise ValueError(f"amp must be auto, bf16 or off, got {amp!r}")
    return DevicePlan(device=dev, autocast_dtype=dtype)


def to_device(batch: Any, device: torch.device) -> Any:
    """Move the tensors of a (nested) batch to `device`; other values pass through unchanged."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # namedtuple
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    if hasattr(batch, "to") and not isinstance(batch, torch.nn.Module):  # e.g. a tokenizer's BatchEncoding
        return batch.to(device)
    return batch
