"""The nightly watchdog: no child of a nightly run outlives it, and the lock outlives every child.

`uniret nightly` starts this process once (in its own session, holding an inherited copy of the
lock file descriptor, so the flock stays held while it lives). Nightly writes the process group
of every command it starts to the watchdog's stdin. When stdin closes (nightly finished, or was
killed with -9 and the kernel closed the pipe) the watchdog SIGKILLs each registered group, waits
until no live member is left, and exits: only then is the lock free for the next run.

Why a watchdog and not PR_SET_PDEATHSIG alone: the death signal reaches only the direct child
(`dvc repro`), not the stage process dvc starts under it, which would be orphaned.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

POLL_S = 0.1
# bound on waiting for killed processes to disappear (a container whose pid 1 never reaps
# zombies counts them as gone; this only guards against an unkillable D-state process)
GONE_TIMEOUT_S = 60.0


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group `pgid`, from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def kill_groups(pgids: set[int], timeout_s: float = GONE_TIMEOUT_S) -> list[int]:
    """SIGKILL every group in `pgids` and wait until they are gone; returns pids still alive."""
    deadline = time.monotonic() + timeout_s
    left: list[int] = []
    while True:
        left = [pid for g in pgids for pid in group_members(g)]
        if not left or time.monotonic() > deadline:
            return left
        for g in pgids:
            try:
                os.killpg(g, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
        time.sleep(POLL_S)


def main() -> int:
    """Read process groups from stdin until EOF, then kill them all and wait for them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for nightly must not stop the cleanup
    pgids: set[int] = set()
    for line in sys.stdin:
        if line.strip().isdigit():
            pgids.add(int(line))
    left = kill_groups(pgids)
    if left:
        print(f"uniret nightly watchdog: processes {left} did not exit after SIGKILL", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
