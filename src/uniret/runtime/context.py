"""The stage context: the params, the data root and the artifacts folder every stage reads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from uniret.config import Params, load_params
from uniret.data.beir import BeirDataset
from uniret.data.roots import resolve_data_root
from uniret.utils.owned import MANIFEST

ARTIFACTS_ENV = "UNIRET_ARTIFACTS"
# validate writes the validated (and, per profile, sliced) copies here; later stages read them.
VALIDATED_DATA = "datasets"


@dataclass
class StageContext:
    """Everything a stage function needs besides its own code."""

    params: Params
    data_root: Path
    artifacts: Path
    # wall-clock start of the stage being run (set by run_stage), so manifests time the whole
    # stage (training, encoding), not just the writing of its outputs
    started: float | None = None

    @property
    def profile(self) -> str:
        return self.params.profile

    def stage_dir(self, stage: str) -> Path:
        """The output folder of `stage` (an upstream stage's outputs are read from here)."""
        return self.artifacts / stage

    def require(self, stage: str) -> Path:
        """An upstream stage's output folder; a clear error when that stage has not run."""
        path = self.stage_dir(stage)
        if not (path / MANIFEST).is_file():
            raise FileNotFoundError(f"{path}: outputs of stage {stage!r} not found; run `uniret {stage}` first")
        return path

    def dataset(self, name: str) -> BeirDataset:
        """A validated dataset snapshot written by the validate stage."""
        path = self.require("validate") / VALIDATED_DATA / name
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: dataset {name!r} was not validated; add it to params.yaml data")
        return BeirDataset(path, name)


def make_context(
    params_path: str | os.PathLike | None = None,
    profile: str | None = None,
    data: str | None = None,
    artifacts: str | os.PathLike | None = None,
) -> StageContext:
    """Build a StageContext from CLI-style arguments and the environment."""
    params = load_params(params_path, profile)
    data_cfg = params.section("data")
    root = resolve_data_root(data, data_cfg.root)
    art = Path(artifacts or os.environ.get(ARTIFACTS_ENV) or "artifacts").resolve()
    return StageContext(params=params, data_root=root, artifacts=art)
