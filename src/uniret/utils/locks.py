"""Advisory file locks (fcntl.flock): one holder at a time across processes on this machine."""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("uniret.locks")


@dataclass
class HeldLock:
    """A held lock: its file and descriptor (pass the fd to a child to keep the lock while it lives)."""

    path: Path
    fd: int


def pid_alive(pid: int) -> bool:
    """True when process `pid` exists (also someone else's) and is not a zombie: a killed process whose
    parent has not reaped it yet still answers kill(0), but it holds and writes nothing."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # Linux: the state letter follows the parenthesised command name
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


class LockHeld(RuntimeError):
    """Another process holds the lock (raised only by non-blocking acquisition)."""


@contextmanager
def file_lock(path: str | os.PathLike, blocking: bool = True) -> Iterator[HeldLock]:
    """Hold an exclusive flock on `path` (created if needed) for the duration of the block.

    The lock is released by the kernel when the process dies, so a crashed run never leaves a
    stale lock behind. The holder's pid is written into the file to help whoever finds it held;
    a pid left there by a process that died holding the lock is logged when the lock is taken over.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        flags = fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB)
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError as exc:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise LockHeld(f"{path}: held by another process (pid {holder}, or the commands it started)") from exc
        previous = os.pread(fd, 64, 0).decode(errors="replace").strip()
        if previous.isdigit() and int(previous) != os.getpid():
            state = "still running, no longer holding it" if pid_alive(int(previous)) else "no longer running"
            log.warning("%s: taking over the lock left by pid %s (%s)", path, previous, state)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield HeldLock(path, fd)
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
