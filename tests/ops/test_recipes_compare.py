"""`uniret recipes compare` scores the main DAG's own recipe instead of training it again."""

from __future__ import annotations

from uniret.ops.recipes_compare import dag_recipe_run
from uniret.runtime import MANIFEST
from uniret.utils.files import atomic_write_json


def _stage(ctx, stage: str, **manifest) -> None:
    atomic_write_json(ctx.stage_dir(stage) / MANIFEST, {"stage": stage, **manifest})


def test_dag_recipe_run_reuses_the_final_model_of_the_same_recipe(tiny_ctx):
    assert dag_recipe_run(tiny_ctx, "clear") is None  # nothing trained yet
    _stage(tiny_ctx, "warmup", recipe="clear", skipped=False, seconds=12.5)
    (tiny_ctx.stage_dir("warmup") / "model").mkdir()
    _stage(tiny_ctx, "continual", recipe="clear", skipped=True, seconds=0.1)

    run = dag_recipe_run(tiny_ctx, "clear")
    assert run is not None and run.ctx is tiny_ctx
    assert run.seconds == {"warmup": 12.5, "continual": 0.1}
    assert dag_recipe_run(tiny_ctx, "unifier") is None  # another recipe trained those models
