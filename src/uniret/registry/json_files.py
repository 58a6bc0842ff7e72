"""Reading the registry's small JSON files (production.json, control.json, nightly.json, canary.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from uniret.registry.errors import RegistryError


def read_registry_json(path: Path, prefix: str = "") -> Any | None:
    """The parsed file, None when it does not exist; RegistryError "<path>: <prefix>invalid JSON: ..."
    (or "not UTF-8 (byte n)") for a damaged one. Callers check the fields they need."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise RegistryError(f"{path}: {prefix}not UTF-8 (byte {exc.start})") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # str(exc) carries the position ("...: line 1 column 19 (char 18)"); exc.msg alone is cut off
        raise RegistryError(f"{path}: {prefix}invalid JSON: {exc}") from exc
