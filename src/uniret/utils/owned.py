"""The one rule for replacing or removing a path: uniret does so only if uniret wrote it, or it is empty.

Every output path a command takes goes through `check_replaceable` before anything is written
(`evaluate --out`, `export opensearch --out`, a stage's folder under `--artifacts`, `significance
--out`, `pipeline compile --output`, `bench --out`), and so does every folder uniret replaces by
a rename (`files.replace_dir`, `files.atomic_dir`) or deletes from the registry (prune):

- a path that does not exist, an empty folder or an empty file: free;
- a folder uniret wrote: its manifest.json is a JSON object stamped `"written_by": "uniret"`
  (OWNER_STAMP, part of every output manifest uniret writes), or one that names the folder itself
  as its `stage` or `version` (stage outputs and registry bundles of versions before the stamp);
- a file uniret wrote: a JSON object with the stamp, or a file starting with the `header` its
  writer gives (a compiled pipeline's `# PIPELINE DEFINITION`);
- anything else is refused with NotOwnedError, one line naming the path and what to do. `force`
  lifts the refusal only where a user expects a --force flag (`data fetch --force`).

Whatever it holds, a path inside a model registry (a folder holding `production.json`, its
`bundles/` or `.registry.lock`: a published bundle is uniret's but never an output path) or inside
a data root the command reads (`data_roots`) is refused by `check_output_path`, which every command
that takes an output path calls before it starts work; `force` does not lift that refusal. The
registry writes its own bundles by rename, not through these checks.

Temp folders uniret names itself (`.<stage>.tmp-<pid>-*`, `.<stage>.old-<pid>`, `.pruned-*`) are
removed by that name alone, by the code that made them (runtime.outputs.clean_stale,
registry.retention). A typo such as `--out .` or `--out ~` is thus refused instead of deleting a
user's work.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

MANIFEST = "manifest.json"
OWNER_KEY = "written_by"
OWNER = "uniret"
OWNER_STAMP = {OWNER_KEY: OWNER}
SELF_NAMING_KEYS = ("stage", "version")  # manifests of earlier versions name their own folder
JSON_SNIFF_BYTES = 1 << 20  # a stamped JSON file is read whole only up to this size


# a model registry's root holds its pointer, or its bundles folder and lock file (uniret.registry.layout
# and pointer, named here so that this helper layer needs no import of the registry)
REGISTRY_MARKERS = ("production.json", "bundles", ".registry.lock")


class NotOwnedError(FileExistsError):
    """An output path exists and holds something uniret did not write: it is left as it is."""


class ProtectedPathError(NotOwnedError):
    """An output path lies inside a model registry or a data root: uniret never writes there."""


def _json_object(path: Path) -> dict | None:
    try:
        if path.stat().st_size > JSON_SNIFF_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_empty(path: str | os.PathLike) -> bool:
    """True for an empty folder or an empty regular file."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        return next(path.iterdir(), None) is None
    return path.is_file() and path.stat().st_size == 0


def written_by_uniret(path: str | os.PathLike, header: bytes | None = None) -> bool:
    """True when `path` carries uniret's mark (module doc): a stamped or self-naming manifest.json
    for a folder; the stamp, or `header` at the start, for a file."""
    path = Path(path)
    if path.is_symlink():
        return False
    if path.is_dir():
        manifest = _json_object(path / MANIFEST)
        return manifest is not None and (
            manifest.get(OWNER_KEY) == OWNER or any(manifest.get(k) == path.name for k in SELF_NAMING_KEYS)
        )
    if not path.is_file():
        return False
    if header is not None:
        with path.open("rb") as fh:
            if fh.read(len(header)) == header:
                return True
    data = _json_object(path)
    return data is not None and data.get(OWNER_KEY) == OWNER


def check_replaceable(path: str | os.PathLike, *, header: bytes | None = None, force: bool = False,
                      force_flag: str | None = None) -> Path:
    """`path` when uniret may replace or remove it (module doc), else NotOwnedError saying what to do.

    `force` (the user's --force, named by `force_flag` in the message) skips the check.
    """
    path = Path(path)
    if force or not os.path.lexists(path) or is_empty(path) or written_by_uniret(path, header):
        return path
    kind = "folder" if path.is_dir() else "file"
    mark = f"no {MANIFEST} of uniret's in it" if kind == "folder" else "not an output of uniret"
    hint = f", or pass {force_flag} to replace it" if force_flag else ""
    raise NotOwnedError(
        f"{path}: refusing to replace this {kind}: uniret did not write it ({mark}) and it is not empty; "
        f"choose another output path, or move it away yourself{hint}"
    )


def check_output_folder(path: str | os.PathLike, *, data_roots: tuple[str | os.PathLike, ...] = ()) -> Path:
    """`path` as a folder uniret writes named files into, keeping whatever else it holds (`bench
    --out`, `data fetch --dest`); refused inside a registry or one of `data_roots` (as by
    `check_output_path`); NotOwnedError when something other than a folder stands there."""
    path = Path(path)
    refuse_in_data_roots(path, data_roots)
    refuse_in_registry(path)
    if os.path.lexists(path) and not path.is_dir():
        raise NotOwnedError(
            f"{path}: not a folder: uniret writes its files into a folder here and replaces nothing it did not "
            "write; choose another output path"
        )
    return path


def registry_holding(path: str | os.PathLike) -> Path | None:
    """The model registry `path` lies in (or is), found by its markers on the way up; None if none."""
    resolved = Path(os.path.abspath(path))
    pointer, bundles, lock = REGISTRY_MARKERS
    for folder in (resolved, *resolved.parents):
        if (folder / pointer).is_file() or ((folder / bundles).is_dir() and os.path.lexists(folder / lock)):
            return folder
    return None


def refuse_in_registry(path: str | os.PathLike) -> None:
    """ProtectedPathError when `path` lies in (or is) a model registry (links resolved)."""
    registry = registry_holding(Path(os.path.realpath(path)))
    if registry is not None:
        raise ProtectedPathError(f"{path}: refusing to write inside the model registry {registry}: its bundles "
                                 "change only by promote, rollback and prune; choose an output path outside it")


def refuse_in_data_roots(path: str | os.PathLike, data_roots: tuple[str | os.PathLike, ...]) -> None:
    """ProtectedPathError when `path` is, or lies below, one of `data_roots` (links resolved)."""
    resolved = Path(os.path.realpath(path))
    for root in data_roots:
        real_root = Path(os.path.realpath(root))
        if resolved == real_root or real_root in resolved.parents:
            raise ProtectedPathError(f"{path}: refusing to write inside the data root {root}: uniret only reads "
                                     "there; choose an output path outside it")


def check_output_path(path: str | os.PathLike, *, data_roots: tuple[str | os.PathLike, ...] = (),
                      header: bytes | None = None, force: bool = False, force_flag: str | None = None) -> Path:
    """`check_replaceable`, and first the refusal of any path inside a registry or a data root (module
    doc): call it before any work, so a refusal costs nothing."""
    path = Path(path)
    refuse_in_data_roots(path, data_roots)
    refuse_in_registry(path)
    return check_replaceable(path, header=header, force=force, force_flag=force_flag)
