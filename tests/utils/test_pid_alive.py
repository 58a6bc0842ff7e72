"""pid_alive: a zombie (killed, not yet reaped) is not alive, so a killed run's temp folder is cleaned."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from uniret.utils.locks import pid_alive


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="zombies are seen through /proc")
def test_a_running_process_is_alive_and_an_unreaped_dead_one_is_not():
    running = subprocess.Popen(["sleep", "30"])
    dead = subprocess.Popen(["true"])  # exits at once; not waited for, so it stays a zombie
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{dead.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.01)
        assert pid_alive(running.pid) and not pid_alive(dead.pid)
    finally:
        running.kill()
        running.wait()
        dead.wait()
    assert not pid_alive(dead.pid)  # reaped: gone
