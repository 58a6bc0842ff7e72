"""The one container image of every component: params.yaml `pipeline.image` (the single source).

Read from the project's params.yaml at import time because kfp bakes `base_image` into each
component when it is defined; pipelines/retrain.py sets the same value on every task, so a
pipeline built from another params file still runs one consistent image.
"""

from __future__ import annotations

from pathlib import Path

from uniret.config import load_params

PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"


def pipeline_image(params_path: Path = PARAMS) -> str:
    """`pipeline.image` of `params_path` (profiles do not change it)."""
    return load_params(params_path).section("pipeline").image


IMAGE = pipeline_image()
