"""Advisory file locks (fcntl.flock): one holder at a time across processes on this machine."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockHeld(RuntimeError):
    """Another process holds the lock (raised only by non-blocking acquisition)."""


@contextmanager
def file_lock(path: str | os.PathLike, blocking: bool = True) -> Iterator[Path]:
    """Hold an exclusive flock on `path` (created if needed) for the duration of the block.

    The lock is released by the kernel when the process dies, so a crashed run never leaves a
    stale lock behind. The holder's pid is written into the file to help whoever finds it held.
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
            raise LockHeld(f"{path}: held by another process (pid {holder})") from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
