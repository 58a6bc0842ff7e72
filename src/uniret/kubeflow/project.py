"""Find the project's pipelines/ and components/ folders, build and compile the pipeline."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from uniret.config.loader import ConfigError
from uniret.config.pipeline import PipelineConfig

PIPELINE_MODULE = "pipelines.retrain"
PIPELINE_SOURCE = Path("pipelines") / "retrain.py"
COMPILED = Path("pipelines") / "retrain.yaml"


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The folder holding pipelines/retrain.py: `start` (or the cwd) or a parent, else the source tree."""
    here = Path(start or Path.cwd()).resolve()
    for cand in (here, *here.parents, Path(__file__).resolve().parents[3]):
        if (cand / PIPELINE_SOURCE).is_file():
            return cand
    raise ConfigError(f"{here}: no {PIPELINE_SOURCE} here or above; run from the uniret project folder")


def load_builder(root: Path) -> Callable[..., Any]:
    """`build_pipeline` of the project at `root` (its folder goes on sys.path for components/)."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(PIPELINE_MODULE).build_pipeline


def build(root: Path, config: PipelineConfig, stages: Sequence[str] | None = None) -> Callable[..., Any]:
    """The pipeline function of `stages` (default: the whole DAG)."""
    return load_builder(root)(stages=stages, config=config)


def compile_pipeline(
    root: Path, config: PipelineConfig, package_path: str | os.PathLike, stages: Sequence[str] | None = None
) -> Path:
    """Compile to `package_path` atomically (a temp file renamed over it); return the path."""
    from kfp import compiler

    target = Path(package_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".yaml", dir=target.parent)
    os.close(fd)
    try:
        compiler.Compiler().compile(build(root, config, stages), tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
