"""One function per DAG stage; the CLI, dvc.yaml and the Kubeflow components all call these.

Each module `uniret.stages.<name>` exposes `run(ctx: StageContext) -> dict` (metrics summary);
`run_stage` runs one by name. The stage context and outputs live in uniret.runtime, the stage
order in uniret.core.dag: domain packages read those, never this package.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from uniret.core.dag import STAGES
from uniret.runtime import StageContext
from uniret.utils.owned import check_output_path

__all__ = ["STAGES", "run_stage"]


def run_stage(stage: str, ctx: StageContext) -> dict[str, Any]:
    """Import `uniret.stages.<stage>` and call its `run(ctx)` (under torchrun when params
    `distributed` gives a training stage several processes: uniret.stages.launch).

    An output folder uniret did not write, or one inside the data root or a model registry, is refused
    before the stage does any work (stage_output would refuse it only after; uniret.utils.owned).
    """
    from uniret.stages import launch

    check_output_path(ctx.stage_dir(stage), data_roots=(ctx.data_root,))
    if launch.wants_torchrun(stage, ctx):
        return launch.run_under_torchrun(stage, ctx)
    module = importlib.import_module(f"uniret.stages.{stage}")
    ctx.started = time.time()
    try:
        return module.run(ctx)
    finally:
        ctx.started = None
