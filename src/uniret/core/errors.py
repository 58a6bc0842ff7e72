"""The project's shared error types, and which exceptions are the user's (bad data, bad params,
missing inputs) and how to print them. Domain-specific errors subclass these in their packages."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from uniret.utils.owned import NotOwnedError
from uniret.utils.text import excerpt


class ConfigError(ValueError):
    """A params.yaml problem: names the file and the key path."""


@dataclass
class DataProblem:
    """One problem found in an input file."""

    path: Path
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = str(self.path)
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f" [{self.field}]"
        return f"{where}: {self.message}"


class DataError(ValueError):
    """Bad input data. Carries every problem found, not only the first."""

    def __init__(self, problems: list[DataProblem] | DataProblem):
        self.problems = problems if isinstance(problems, list) else [problems]
        super().__init__("\n".join(str(p) for p in self.problems))


class FetchError(RuntimeError):
    """A dataset download failed (HTTP error, checksum mismatch, not a BEIR zip)."""


class StageFailed(RuntimeError):
    """A stage ran and decided the run must stop (failed expectations, broken parity, ...)."""


class CheckpointError(StageFailed, ValueError):
    """A checkpoint file or folder cannot be read (truncated, foreign, damaged): names the file."""


class EngineError(RuntimeError):
    """A search engine (Milvus) cannot be reached or refuses: names the URI or collection and why."""


class InputFileError(StageFailed, ValueError):
    """An input file exists but cannot be read (truncated, corrupted, another format): names the file."""


USER_ERRORS: tuple[type[BaseException], ...] = (
    ConfigError, DataError, FetchError, StageFailed, FileNotFoundError, NotOwnedError, EngineError,
)
PASSED_THROUGH = (MemoryError, RecursionError)  # the machine's problem or a bug, not the file's


CAUSE_CHARS = 200  # of a reader's own message quoted after the file name


def _cause(exc: BaseException, path: str, shown: str) -> str:
    """The gist of a reader's exception, naming the file as the user knows it: a Java exception's
    own message (pyjnius appends the stack), else the first line past a C++ library's "Error in
    <signature> ... Error: " prefix."""
    lines = str(getattr(exc, "innermessage", None) or exc).strip().splitlines()
    text = lines[0].rsplit("Error: ", 1)[-1] if lines else ""
    if Path(path).is_absolute():  # a link's path (a work folder) in the library's words: the user's file instead
        text = text.replace(path, shown)
    return excerpt(text, CAUSE_CHARS, quote=False) if text else type(exc).__name__


@contextmanager
def reading(path: str | os.PathLike, what: str) -> Iterator[None]:
    """Turn any failure of the reader run inside into one InputFileError naming `path` (resolved,
    so a link in a work folder names the user's file) and what it should have been.

    faiss, ONNX Runtime, numpy, zipfile and json each raise their own types, with messages that
    may span lines or hold a library's internals: the user gets `<file>: not a readable <what>
    (truncated or corrupted?): <gist>`. A missing file and errors already meant for the user
    pass through unchanged.
    """
    try:
        yield
    except (*USER_ERRORS, *PASSED_THROUGH):
        raise
    except Exception as exc:  # noqa: BLE001 - every reader failure of this file is the same user error
        shown = str(Path(path).resolve() if os.path.lexists(path) else path)
        raise InputFileError(
            f"{shown}: not a readable {what} (truncated or corrupted?): {type(exc).__name__}: "
            f"{_cause(exc, str(path), shown)}"
        ) from exc


# a full disk or quota, or a file size limit: the environment's problem, told in one line
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, USER_ERRORS) or (isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS)


def format_error(exc: BaseException) -> str:
    text = str(exc)
    return ("\n  " + text.replace("\n", "\n  ")) if "\n" in text else text
