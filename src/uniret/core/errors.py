"""The project's shared error types, and which exceptions are the user's (bad data, bad params,
missing inputs) and how to print them. Domain-specific errors subclass these in their packages."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path


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


USER_ERRORS: tuple[type[BaseException], ...] = (ConfigError, DataError, FetchError, StageFailed, FileNotFoundError,
                                                EngineError)


# a full disk or quota, or a file size limit: the environment's problem, told in one line
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, USER_ERRORS) or (isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS)


def format_error(exc: BaseException) -> str:
    text = str(exc)
    return ("\n  " + text.replace("\n", "\n  ")) if "\n" in text else text
