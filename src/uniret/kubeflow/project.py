"""Find the project folder (its compiled pipelines/retrain.yaml) and compile the pipeline."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from uniret.config.loader import ConfigError
from uniret.config.pipeline import PipelineConfig
from uniret.utils.owned import check_output_path

PIPELINE_SOURCE = Path("pipelines") / "retrain.py"
COMPILED = Path("pipelines") / "retrain.yaml"
COMPILED_HEADER = b"# PIPELINE DEFINITION"  # the first line kfp's compiler writes: a file it wrote may be replaced


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The folder holding pipelines/retrain.py: `start` (or the cwd) or a parent, else the source tree."""
    here = Path(start or Path.cwd()).resolve()
    for cand in (here, *here.parents, Path(__file__).resolve().parents[3]):
        if (cand / PIPELINE_SOURCE).is_file():
            return cand
    raise ConfigError(f"{here}: no {PIPELINE_SOURCE} here or above; run from the uniret project folder")


def compile_pipeline(config: PipelineConfig, package_path: str | os.PathLike,
                     stages: Sequence[str] | None = None) -> Path:
    """Compile `stages` (default: the whole DAG) to `package_path` atomically (a temp file renamed over it).

    An existing file is replaced only when it is a compiled pipeline (or empty): uniret.utils.owned.
    """
    from kfp import compiler

    from uniret.kubeflow.pipeline import build_pipeline

    target = check_output_path(package_path, header=COMPILED_HEADER)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".yaml", dir=target.parent)
    os.close(fd)
    try:
        compiler.Compiler().compile(build_pipeline(config, stages), tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
