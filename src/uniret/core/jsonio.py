"""Reading JSON files written by other stages, with errors that name the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from uniret.core.errors import DataError, DataProblem


def read_json(path: str | Path, expect: type = dict) -> Any:
    """Parse `path`; a DataError naming file and line on bad JSON or an unexpected top-level type."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(DataProblem(path, exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")) from exc
    except UnicodeDecodeError as exc:
        raise DataError(DataProblem(path, None, None, f"not UTF-8 (byte {exc.start})")) from exc
    if not isinstance(data, expect):
        raise DataError(DataProblem(path, 1, None, f"expected a JSON {expect.__name__}, got {type(data).__name__}"))
    return data


def read_optional_json(path: str | Path, what: str) -> tuple[Any | None, str | None]:
    """(data, None) when `path` exists, else (None, "<what> not found at <path>") for a skip reason."""
    path = Path(path)
    if not path.is_file():
        return None, f"{what} not found at {path}"
    return read_json(path), None
