"""Seeding, RNG capture/restore, device and autocast choice."""

from __future__ import annotations

import random
from collections import namedtuple

import numpy as np
import torch

from uniret.training import device as device_module
from uniret.training.device import cpu_flags, cpu_vendor, flags_have_native_bf16, plan_device, to_device
from uniret.training.seeding import capture_rng_state, restore_rng_state, seed_everything


def _draw():
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_seed_everything_makes_all_rngs_repeat():
    seed_everything(5)
    first = _draw()
    seed_everything(5)
    assert _draw() == first
    seed_everything(6)
    assert _draw() != first


def test_captured_state_restores_every_rng():
    seed_everything(1)
    state = capture_rng_state()
    expected = [_draw() for _ in range(3)]
    _draw()
    restore_rng_state(state)
    assert [_draw() for _ in range(3)] == expected


def test_cpu_plan_has_no_autocast_unless_configured():
    plan = plan_device("cpu", "auto")
    assert plan.device.type == "cpu" and plan.autocast_dtype is None
    with plan.autocast():
        out = torch.ones(2, 2) @ torch.ones(2, 2)
    assert out.dtype == torch.float32


def test_bf16_autocast_when_configured_on_cpu():
    plan = plan_device("cpu", "bf16")
    with plan.autocast():
        out = torch.ones(2, 2) @ torch.ones(2, 2)
    assert out.dtype == torch.bfloat16
    assert "bfloat16" in plan.describe()


def _cpuinfo(tmp_path, flags: str, vendor: str = "GenuineIntel"):
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: test\nflags\t\t: {flags}\n\n"
                    "processor\t: 1\n")
    return str(path)


def test_native_bf16_is_read_from_the_cpu_flags_and_vendor(tmp_path, monkeypatch):
    # the flags as listed: scripts/avx2_emulation.sh's drop variable would hide avx512_bf16 (next test)
    monkeypatch.delenv("UNIRET_CPU_FLAGS_DROP", raising=False)

    def native(flags: str, vendor: str) -> bool:
        cpuinfo = _cpuinfo(tmp_path, flags, vendor)
        return flags_have_native_bf16(cpu_flags(cpuinfo), cpu_vendor(cpuinfo))

    assert cpu_flags(_cpuinfo(tmp_path, "fpu sse avx2")) == {"fpu", "sse", "avx2"}
    assert cpu_vendor(_cpuinfo(tmp_path, "fpu", "AuthenticAMD")) == "AuthenticAMD"
    assert native("fpu sse avx2 avx512f avx512_bf16 avx512_vnni", "AuthenticAMD")  # Zen 4 (E18)
    assert native("fpu avx512f avx512_bf16 amx_bf16 amx_tile", "GenuineIntel")  # AMX
    # an Intel Xeon listing avx512_bf16 without AMX trained slower in bf16 (E87)
    assert not native("fpu sse avx2 avx512f avx512_bf16 avx512_vnni", "GenuineIntel")
    # AVX-512 alone (Skylake/Ice Lake) only converts bf16: no native arithmetic
    assert not native("fpu sse avx2 avx512f avx512bw avx512_vnni", "AuthenticAMD")
    assert cpu_flags(str(tmp_path / "missing")) == frozenset()  # not Linux, or unreadable: fp32
    assert cpu_vendor(str(tmp_path / "missing")) == ""


def test_flags_named_in_the_drop_variable_count_as_absent(tmp_path, monkeypatch):
    """scripts/avx2_emulation.sh: the code's own bf16 test answers as on a CPU without them."""
    monkeypatch.setenv("UNIRET_CPU_FLAGS_DROP", "avx512_bf16 amx_bf16")
    flags = cpu_flags(_cpuinfo(tmp_path, "fpu avx2 avx512f avx512_bf16 amx_bf16"))
    assert flags == {"fpu", "avx2", "avx512f"} and not flags_have_native_bf16(flags, "AuthenticAMD")


def test_native_amp_autocasts_only_on_a_native_bf16_cpu(monkeypatch):
    monkeypatch.setattr(device_module, "cpu_has_native_bf16", lambda: True)
    assert plan_device("cpu", "native").autocast_dtype == torch.bfloat16
    monkeypatch.setattr(device_module, "cpu_has_native_bf16", lambda: False)
    plan = plan_device("cpu", "native")
    assert plan.autocast_dtype is None and "off" in plan.describe()


def test_auto_device_follows_cuda_availability():
    plan = plan_device("auto", "auto")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert plan.device.type == expected
    assert (plan.autocast_dtype == torch.bfloat16) == (expected == "cuda")


def test_to_device_walks_nested_batches():
    Pair = namedtuple("Pair", "a b")
    batch = {"x": torch.ones(1), "meta": ["id", (torch.zeros(1),)], "pair": Pair(torch.ones(1), 3)}
    moved = to_device(batch, torch.device("cpu"))
    assert torch.equal(moved["x"], batch["x"]) and moved["meta"][0] == "id"
    assert isinstance(moved["pair"], Pair) and moved["pair"].b == 3
