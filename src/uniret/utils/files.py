"""Atomic writes and content hashes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from uniret.utils.owned import check_replaceable

CHUNK = 1 << 20


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def make_temp_dir(parent: str | os.PathLike, prefix: str) -> Path:
    """A new temp folder in `parent` (to be renamed into place), with the umask's usual mode.

    mkdtemp makes it 0700, and the rename would publish that: stage outputs, checkpoints and
    indexes could then be read by their writer only (not by a serving pod or a teammate on a
    shared volume), unlike every folder `mkdir` makes.
    """
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    tmp.chmod(0o777 & ~_UMASK)
    return tmp


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[IO[Any]]:
    """Yield a file opened in a temp file beside `path`; on success fsync and rename it over `path`.

    On any error the temp file is removed and `path` keeps its previous content.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; published files (metrics, manifests, pointers) must be readable
        # by other users of the volume (serving pods), so apply the usual umask-based mode.
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp folder beside `path`; on success it replaces `path` (a folder) by a rename.

    On any error the temp folder is removed and `path` keeps its previous content. An existing
    `path` uniret did not write is refused before anything is written (uniret.utils.owned).
    """
    path = Path(path)
    check_replaceable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(path.parent, f".{path.name}.")
    try:
        yield tmp
        replace_dir(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to a temp file beside `path`, then rename it over `path`."""
    with atomic_open(path, "w") as fh:
        fh.write(text)
    return Path(path)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Atomically write `obj` as indented, key-sorted JSON."""
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def hash_path(path: str | os.PathLike) -> str:
    """sha256 of a file, or of a directory's sorted (relative path, content hash) pairs."""
    path = Path(path)
    if path.is_file():
        return sha256_file(path)
    h = hashlib.sha256()
    for p in sorted(q for q in path.rglob("*") if q.is_file()):
        h.update(str(p.relative_to(path)).encode())
        h.update(sha256_file(p).encode())
    return h.hexdigest()


def replace_dir(tmp: Path, final: Path) -> None:
    """Rename `tmp` onto `final`, removing a previous `final` only after the rename succeeded.

    A previous `final` uniret did not write is refused (NotOwnedError, uniret.utils.owned).
    """
    old = None
    if os.path.lexists(final):
        check_replaceable(final)
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
    os.replace(tmp, final)
    if old is not None and old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    elif old is not None:
        old.unlink(missing_ok=True)  # an empty file, or a link, stood at the output path


def shown_path(path: str | os.PathLike, root: str | os.PathLike) -> str:
    """`path` relative to `root` when inside it (committed results must not name one machine's
    folders), else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)
