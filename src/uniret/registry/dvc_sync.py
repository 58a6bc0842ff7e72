"""`dvc push` of the registry when the project has a DVC remote (skipped, with a log line, otherwise)."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

log = logging.getLogger("uniret.registry")


def _dvc() -> list[str]:
    """The dvc executable of this environment (the venv's bin first, then PATH)."""
    local = Path(sys.executable).with_name("dvc")
    if local.is_file():
        return [str(local)]
    found = shutil.which("dvc")
    return [found] if found else []


def dvc_root(path: Path) -> Path | None:
    """The nearest folder at or above `path` holding a .dvc/ project."""
    for folder in [path, *path.parents]:
        if (folder / ".dvc").is_dir():
            return folder
    return None


def push_registry(root: Path) -> str:
    """Track the registry with `dvc add` and `dvc push` it; returns a one-line status.

    Returns "skipped: ..." when there is no DVC project, no dvc executable or no remote;
    "failed: ..." when a dvc command fails (the registry change itself stands); else "pushed".
    """
    root = root.resolve()
    project, dvc = dvc_root(root), _dvc()
    if project is None:
        status = f"skipped: {root} is not inside a DVC project"
    elif not dvc:
        status = "skipped: dvc executable not found"
    else:
        remotes = subprocess.run([*dvc, "remote", "list"], cwd=project, capture_output=True, text=True, check=False)
        if remotes.returncode != 0:
            status = f"failed: dvc remote list: {remotes.stderr.strip()}"
        elif not remotes.stdout.strip():
            status = "skipped: no DVC remote configured"
        else:
            rel = str(root.relative_to(project))
            status = "pushed"
            for cmd in (["add", rel], ["push", f"{rel}.dvc"]):
                out = subprocess.run([*dvc, *cmd], cwd=project, capture_output=True, text=True, check=False)
                if out.returncode != 0:
                    status = f"failed: dvc {' '.join(cmd)}: {(out.stderr or out.stdout).strip()[-500:]}"
                    break
    (log.info if not status.startswith("failed") else log.warning)("registry dvc push %s", status)
    return status
