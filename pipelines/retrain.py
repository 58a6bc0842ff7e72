"""The retraining DAG as a Kubeflow pipeline: entry point of `python pipelines/retrain.py [out.yaml]`.

The pipeline is built in the package (uniret.kubeflow.pipeline, components in
uniret.kubeflow.components) from params.yaml `pipeline:`; this file compiles it to
pipelines/retrain.yaml, as `uniret pipeline compile` does.
"""

import sys
from pathlib import Path

from uniret.config import load_params
from uniret.kubeflow.pipeline import build_pipeline, plan_stages  # noqa: F401 - the entry point's API
from uniret.kubeflow.project import COMPILED, compile_pipeline

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    cfg = load_params(ROOT / "params.yaml").section("pipeline")
    print(compile_pipeline(cfg, sys.argv[1] if len(sys.argv) > 1 else ROOT / COMPILED))
