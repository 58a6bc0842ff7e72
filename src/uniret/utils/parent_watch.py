"""A nightly's commands die with it, even when its watchdog is killed too.

`uniret nightly` starts each configured command (`dvc repro`) with `die_with_parent` (the kernel
SIGKILLs it when nightly dies) and names itself in $UNIRET_NIGHTLY_PID. The commands dvc starts
under it (`uniret <stage>`) are not its direct children, so the kernel's signal does not reach
them; each `uniret` process started with that variable set calls `watch_nightly`, which exits it
(code 137, as a SIGKILL would) once that process is gone. The watchdog (uniret.ops.watchdog) still
does the same for every process group while it lives; this covers the case where it is killed with
nightly.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from pathlib import Path

from uniret.utils.locks import pid_alive

NIGHTLY_PID_ENV = "UNIRET_NIGHTLY_PID"
POLL_S = 0.2
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; a no-op elsewhere).
    Meant as a subprocess preexec_fn."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (dead, not yet reaped by its parent) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return pid_alive(pid) and not Path("/proc").is_dir()  # no /proc: trust kill(0)
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def watch_nightly(poll_s: float = POLL_S) -> threading.Thread | None:
    """Exit this process when the nightly named in $UNIRET_NIGHTLY_PID is gone; None when not under one."""
    value = os.environ.get(NIGHTLY_PID_ENV, "")
    if not value.isdigit():
        return None
    pid = int(value)

    def watch() -> None:
        while alive(pid):
            time.sleep(poll_s)
        os._exit(137)

    thread = threading.Thread(target=watch, name="nightly-watch", daemon=True)
    thread.start()
    return thread
