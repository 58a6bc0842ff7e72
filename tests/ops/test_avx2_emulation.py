"""scripts/avx2_emulation.sh: the libraries held to AVX2, and with AVX2_EMULATION_CPUS a CPU quota (E107)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "avx2_emulation.sh"


def _run(command: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), "bash", "-c", command], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=60)


def test_the_libraries_are_held_to_avx2_and_the_bf16_flags_dropped():
    done = _run('echo "$ATEN_CPU_CAPABILITY $ONEDNN_MAX_CPU_ISA $FAISS_OPT_LEVEL|$UNIRET_CPU_FLAGS_DROP"')
    assert done.returncode == 0, done.stderr
    held, dropped = done.stdout.strip().split("|")
    assert held == "avx2 AVX2 avx2" and "avx512_bf16" in dropped.split()


@pytest.mark.parametrize("cpus", ["abc", "0", "0.0", "-1", "1.5x"])
def test_a_cpu_count_that_is_not_positive_is_refused_before_the_command_runs(cpus, tmp_path):
    marker = tmp_path / "ran"
    done = _run(f"touch {marker}", AVX2_EMULATION_CPUS=cpus)
    assert done.returncode == 2 and f"AVX2_EMULATION_CPUS={cpus} is not a positive number of CPUs" in done.stderr
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").is_file(),
                    reason="needs root and cgroup v1's cpu controller (this project's machines have both)")
def test_the_command_runs_in_a_cgroup_held_to_the_quota():
    # a group of this test's own: a suite run under the emulation keeps its quota
    name = f"uniret-avx2-test-{os.getpid()}"
    group = Path("/sys/fs/cgroup/cpu") / name
    try:
        done = _run("cat /proc/self/cgroup", AVX2_EMULATION_CPUS="1.5", AVX2_EMULATION_CGROUP=name)
        assert done.returncode == 0, done.stderr
        assert any(line.split(":")[1:] == ["cpu", f"/{name}"] for line in done.stdout.splitlines()), done.stdout
        assert (group / "cpu.cfs_quota_us").read_text().strip() == "150000"
        assert (group / "cpu.cfs_period_us").read_text().strip() == "100000"
    finally:
        if group.is_dir():
            group.rmdir()  # empty once the command has exited
