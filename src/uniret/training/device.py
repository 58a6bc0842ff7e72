"""Device and mixed-precision choice: CUDA with bf16 autocast when present, plain fp32 on CPU
unless the CPU trains faster in bf16 and the config asks for it (amp "native")."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from uniret.utils.cpuinfo import CPUINFO, cpuinfo_field


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


# bf16 autocast pays on a CPU with AMX (amx_bf16: Sapphire Rapids and later) and on AMD's AVX512-BF16
# (Zen 4: training 1.6x faster, E18); an Intel Xeon listing avx512_bf16 without AMX trained 8-23% slower
# in bf16 (E87), as does every CPU without either (oneDNN converts bf16 to fp32)
AMX_BF16 = "amx_bf16"
AVX512_BF16 = "avx512_bf16"
AMD_VENDOR = "AuthenticAMD"
# flags to treat as absent: scripts/avx2_emulation.sh runs the code as on a CPU without them
FLAGS_DROP_ENV = "UNIRET_CPU_FLAGS_DROP"


def cpu_flags(cpuinfo: str = CPUINFO) -> frozenset[str]:
    """The CPU feature flags /proc/cpuinfo lists, less those named in $UNIRET_CPU_FLAGS_DROP (empty
    where it cannot be read: not Linux)."""
    dropped = frozenset(os.environ.get(FLAGS_DROP_ENV, "").split())
    return frozenset((cpuinfo_field("flags", cpuinfo) or "").split()) - dropped


def cpu_vendor(cpuinfo: str = CPUINFO) -> str:
    """The vendor_id /proc/cpuinfo names (GenuineIntel, AuthenticAMD); empty where it cannot be read."""
    return cpuinfo_field("vendor_id", cpuinfo) or ""


def flags_have_native_bf16(flags: frozenset[str], vendor: str) -> bool:
    """True when a CPU of `vendor` with feature `flags` trains faster in bf16 than in fp32: AMX, or
    AVX512-BF16 on AMD (E18, E87)."""
    return AMX_BF16 in flags or (AVX512_BF16 in flags and vendor == AMD_VENDOR)


@functools.cache
def cpu_has_native_bf16() -> bool:
    """True when this CPU trains faster in bf16 (flags_have_native_bf16); False where unknown."""
    return flags_have_native_bf16(cpu_flags(), cpu_vendor())


def plan_device(device: str = "auto", amp: str = "auto") -> DevicePlan:
    """Pick the device ("auto": CUDA if available) and the autocast dtype.

    amp "auto" means bf16 on CUDA and none on CPU (CPU bf16 autocast is slow on most CPUs and
    changes numerics, so it only happens when configured); "native" means bf16 on CUDA and on a
    CPU that trains faster in bf16 (cpu_has_native_bf16), fp32 elsewhere; "bf16" always.
    """
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but CUDA is not available")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    return DevicePlan(device=dev, autocast_dtype=autocast_dtype(amp, dev))


def autocast_dtype(amp: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype an `amp` setting (plan_device) means on `device`; None: fp32."""
    if amp == "off":
        return None
    if amp == "bf16":
        return torch.bfloat16
    if amp == "auto":
        return torch.bfloat16 if device.type == "cuda" else None
    if amp == "native":
        return torch.bfloat16 if device.type == "cuda" or cpu_has_native_bf16() else None
    raise ValueError(f"amp must be auto, native, bf16 or off, got {amp!r}")


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
