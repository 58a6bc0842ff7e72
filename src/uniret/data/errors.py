"""Errors for bad input data: each names the file, the line and the field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
