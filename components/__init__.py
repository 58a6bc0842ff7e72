"""One Kubeflow component per DAG stage (components/<stage>.py), all on the same image.

Components only plumb arguments: each calls uniret.kubeflow.task.run_component, which runs
`uniret.stages.<stage>.run` (the function the CLI and dvc.yaml call) on the shared workdir.
"""

from __future__ import annotations

import importlib

from kfp.dsl.python_component import PythonComponent

from uniret.stages import STAGES


def load_components() -> dict[str, PythonComponent]:
    """Stage name -> its component, in DAG order."""
    return {stage: getattr(importlib.import_module(f"components.{stage}"), stage) for stage in STAGES}
