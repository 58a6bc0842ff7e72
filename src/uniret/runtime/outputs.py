"""A stage's outputs: written to a temp folder with their manifest.json, then renamed into place."""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from uniret import __version__
from uniret.core.errors import StageFailed
from uniret.runtime.context import MANIFEST, StageContext
from uniret.utils.files import atomic_write_json, hash_path, make_temp_dir, replace_dir
from uniret.utils.locks import pid_alive
from uniret.utils.owned import OWNER_STAMP, check_output_path

log = logging.getLogger("uniret")


def versions() -> dict[str, str]:
    """Versions of the interpreter and the libraries that shape results (read, not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"uniret": __version__, "python": platform.python_version()}
    for dist in ("torch", "transformers", "faiss-cpu", "pyserini", "onnxruntime", "pytrec-eval-terrier"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return out


def _owner_pid(name: str, marker: str) -> int | None:
    """The pid in `.<stage>.tmp-<pid>-xyz` / `.<stage>.old-<pid>` (None when the name has none)."""
    head = name.split(marker, 1)[1].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def clean_stale(artifacts: Path, stage: str) -> list[Path]:
    """Remove temp folders of `stage` left by dead processes (a killed run); returns what was removed.

    A `.old-<pid>` folder is the previous output moved aside just before the new one was renamed
    in: when the process died in between, it is put back, so a crash never loses the last good output.
    """
    removed: list[Path] = []
    if not artifacts.is_dir():
        return removed
    final = artifacts / stage
    for marker in (".tmp-", ".old-"):
        for path in sorted(artifacts.glob(f".{stage}{marker}*")):
            pid = _owner_pid(path.name, marker)
            if pid is not None and pid != os.getpid() and pid_alive(pid):
                continue  # a concurrent run of this stage is still writing it
            if marker == ".old-" and not final.exists():
                os.replace(path, final)
                log.warning("stage %s: restored the previous output from %s (a run died mid-rename)", stage, path.name)
                continue
            if not path.is_dir() or path.is_symlink():
                continue  # uniret names only folders so: a file here is not one of its temp folders
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    if removed:
        log.warning("stage %s: removed %d stale temp folder(s) of killed runs: %s", stage, len(removed),
                    ", ".join(p.name for p in removed))
    return removed


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def check_outputs_outside_inputs(stage: str, outputs: Sequence[Path], inputs: dict[str, Path]) -> None:
    """StageFailed when an output folder is, contains or lies inside one of the stage's inputs."""
    for out in outputs:
        resolved_out = Path(out).resolve()
        for key, value in inputs.items():
            src = Path(value).resolve()
            if _overlaps(resolved_out, src):
                raise StageFailed(
                    f"stage {stage}: refusing to write {resolved_out}: it overlaps its input {key!r} ({src}); "
                    "choose an artifacts folder outside the data"
                )


@contextmanager
def stage_output(
    ctx: StageContext,
    stage: str,
    sections: list[str] | None = None,
    inputs: dict[str, Path] | None = None,
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Yield (temp dir, manifest dict); on success write manifest.json and rename onto artifacts/<stage>.

    On any error the temp dir is removed and the previous outputs stay untouched, so a failed
    stage never leaves half-written results. A stage never writes inside its own inputs, and
    temp folders of earlier killed runs of the stage are removed first. An existing output folder
    uniret did not write (no manifest of its own) is refused before any work (uniret.utils.owned).
    """
    check_outputs_outside_inputs(stage, [ctx.stage_dir(stage)], inputs or {})
    ctx.artifacts.mkdir(parents=True, exist_ok=True)
    clean_stale(ctx.artifacts, stage)
    check_output_path(ctx.stage_dir(stage), data_roots=(ctx.data_root,))
    tmp = make_temp_dir(ctx.artifacts, f".{stage}.tmp-{os.getpid()}-")
    manifest: dict[str, Any] = {
        **OWNER_STAMP,
        "stage": stage,
        "profile": ctx.profile,
        "params": {s: ctx.params.resolved(s) for s in (sections or [])},
        "inputs": {k: hash_path(v) for k, v in (inputs or {}).items() if Path(v).exists()},
        "versions": versions(),
        "metrics": {},
    }
    start = ctx.started if ctx.started is not None else time.time()
    try:
        yield tmp, manifest
        manifest["seconds"] = round(time.time() - start, 3)
        atomic_write_json(tmp / MANIFEST, manifest)
        replace_dir(tmp, ctx.stage_dir(stage))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("stage %s done in %.1fs -> %s", stage, manifest["seconds"], ctx.stage_dir(stage))


def read_manifest(path: Path) -> dict[str, Any]:
    """Read a stage's manifest.json."""
    return json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))


def stage_seconds(ctx: StageContext, stages: Sequence[str]) -> dict[str, float]:
    """{stage: wall seconds} from the manifests of those of `stages` that ran, in the given order."""
    out = {}
    for stage in stages:
        path = ctx.stage_dir(stage) / MANIFEST
        seconds = read_manifest(ctx.stage_dir(stage)).get("seconds") if path.is_file() else None
        if isinstance(seconds, (int, float)):
            out[stage] = float(seconds)
    return out
