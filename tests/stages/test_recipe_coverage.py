"""Every recipe of params.yaml (training.recipes) runs through its stage code on the tiny profile,
indexes the model it trained into a bundle, and that bundle answers over HTTP (127.0.0.1) in the
recipe's serve mode; `uniret recipes compare` then scores two of those trained recipes.

Recipes are read from params.yaml, so a new recipe is covered without editing this file. Each
recipe is trained once per module (the `trained` fixture) with `recipes_compare.train_recipe`, the
function `uniret recipes compare` calls: every training stage's `run`, stages outside the recipe's
plan writing their skip manifest. validate is the usual tiny-slice stand-in, bm25 is real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval
import yaml

from uniret.config.recipes import TRAINING_STAGES
from uniret.runtime import read_manifest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
RECIPES = sorted(path.stem for path in (REPO / "recipes").glob("*.yaml"))  # one file per recipe
MODEL_STAGES = ("distill", "continual", "warmup")  # the index stage's `auto` order
STARTUP_TIMEOUT_S = 300.0
K = 5


@pytest.fixture(scope="module")
def base(tmp_path_factory, shared_data):
    """A params file evaluating SciFact only (the CLI reads it too), validated slices, the bm25 stage."""
    from uniret.data.beir import BeirDataset
    from uniret.data.slicing import write_slice
    from uniret.runtime import MANIFEST, VALIDATED_DATA, make_context
    from uniret.stages import bm25
    from uniret.utils.files import atomic_write_json

    tmp = tmp_path_factory.mktemp("recipes")
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    raw["data"]["eval_datasets"] = ["scifact"]
    (tmp / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    ctx = make_context(tmp / "params.yaml", "tiny", str(shared_data), tmp / "artifacts")
    data = ctx.params.section("data")
    write_slice(BeirDataset(shared_data / "scifact", "scifact"), ctx.stage_dir("validate") / VALIDATED_DATA / "scifact",
                data.slice)
    atomic_write_json(ctx.stage_dir("validate") / MANIFEST, {"stage": "validate", "fixture": True})
    bm25.run(ctx)
    return ctx


@pytest.fixture(scope="module")
def trained(base):
    """recipe -> its RecipeRun (artifacts/recipes/<recipe>/, index stage included), trained on first use."""
    from uniret.ops.recipes_compare import train_recipe
    from uniret.stages import index

    done = {}

    def get(recipe: str):
        if recipe not in done:
            run = train_recipe(base, recipe)
            index.run(_static_tables_only_if_served(run.ctx, recipe))
            done[recipe] = run
        return done[recipe]

    return get


def _static_tables_only_if_served(ctx, recipe: str):
    """`ctx` with the index stage's static query tables off unless the recipe serves a mode that reads
    them (hybrid_fast, the static routes): they cost 10-45 s a recipe and serve nothing here (E49);
    tests/retrieval/test_static_query.py and the tiny DAG runs cover them."""
    import copy

    from uniret.config import Params
    from uniret.config.modes import STATIC_MODES
    from uniret.runtime import StageContext

    serve = ctx.params.section("training").plan(recipe).serve_mode
    if serve in (*STATIC_MODES, "hybrid_fast"):
        return ctx
    raw = copy.deepcopy(ctx.params.raw)
    raw["index"]["static_query"]["enabled"] = False
    return StageContext(Params(raw=raw, profile=ctx.params.profile, path=ctx.params.path), ctx.data_root, ctx.artifacts)


def _check_stages(ctx, recipe: str) -> None:
    """Stages in the plan ran for this recipe (with their configured steps); the others wrote skip manifests."""
    from uniret.stages.recipe_stage import active_recipe

    active = active_recipe(ctx)
    assert active.name == recipe
    for stage in TRAINING_STAGES:
        manifest = read_manifest(ctx.stage_dir(stage))
        assert manifest["recipe"] == recipe, stage
        if stage not in active.plan.stages:
            assert manifest["skipped"] is True and sorted(p.name for p in ctx.stage_dir(stage).iterdir()) == ["manifest.json"]
            continue
        assert manifest["skipped"] is False, stage
        if stage == "mine":
            assert manifest["metrics"]["queries"] > 0
            continue
        assert (ctx.stage_dir(stage) / "model").is_dir(), stage
        assert manifest["metrics"]["steps"] == active.stage_config(stage).train.max_steps > 0, stage
        assert manifest["metrics"]["final_loss"] == manifest["metrics"]["final_loss"], stage  # not NaN


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_trains_indexes_and_serves_its_mode_over_http(trained, base, recipe, tmp_path):
    from uniret.bench.http_client import post_json
    from uniret.bench.server import LOOPBACK, LocalServer

    run = trained(recipe)
    _check_stages(run.ctx, recipe)
    plan = base.params.section("training").plan(recipe)
    bundle = run.ctx.stage_dir("index") / "bundle"
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["model"]["recipe"] == recipe and manifest["model"]["serve_mode"] == plan.serve_mode
    assert manifest["model"]["source_stage"] == next(s for s in MODEL_STAGES if s in plan.stages)
    docids = set(json.loads((bundle / "docids.json").read_text()))
    query = next(iter(run.ctx.dataset("scifact").split_queries("test").values()))

    with LocalServer(["--bundle", str(bundle)], base.params.path, "tiny", log_dir=tmp_path) as server:
        server.start(STARTUP_TIMEOUT_S)
        status, body = post_json(LOOPBACK, server.port, "/search", {"query": query, "k": K})
        assert status == 200, body
        assert body["mode"] == plan.serve_mode  # the recipe's mode is the server's default
        hits = body["results"]
        assert 0 < len(hits) <= K
        assert {h["doc_id"] for h in hits} <= docids
        scores = [h["score"] for h in hits]
        assert scores == sorted(scores, reverse=True)
        status, named = post_json(LOOPBACK, server.port, "/search", {"query": query, "k": K, "mode": plan.serve_mode})
        assert status == 200 and named["results"] == hits


def _ndcg10(qrels, run) -> float:
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return sum(v["ndcg_cut_10"] for v in per_query.values()) / len(qrels)


def test_recipes_compare_scores_the_trained_recipes(trained, base, shared_data):
    """`uniret recipes compare --no-train` on two trained recipes: compare.json holds BM25 and every eval
    mode of both, each figure is pytrec_eval's on that system's run, and compare.md shows every row."""
    from uniret.cli import main
    from uniret.config.modes import FUSION_MODES as BUNDLE_MODES
    from uniret.core.runs import read_run
    from uniret.evaluation.model_source import TrainedModelSource

    recipes = ["hybrid", "unifier"]  # the first two of the former params.yaml order
    runs = {r: trained(r) for r in recipes}
    rc = main(["recipes", "compare", "--params", str(base.params.path), "--profile", "tiny", "--data", str(shared_data),
               "--artifacts", str(base.artifacts), "--recipes", *recipes, "--no-train", "--no-zeroshot"])
    assert rc == 0
    out = base.artifacts / "recipes"
    doc = json.loads((out / "compare.json").read_text())
    training = base.params.section("training")
    expected = {"bm25"} | {f"{r}/{m}" for r in recipes for m in training.plan(r).eval_modes}
    # a recipe served in a fused mode is also scored from its bundle (weights learned on the dev split)
    expected |= {f"{r}/{m}" for r in recipes if training.plan(r).serve_mode in BUNDLE_MODES
                 for m in {training.plan(r).serve_mode, "hybrid"}}
    assert set(doc["datasets"]["scifact"]) == expected
    assert doc["recipes"] == recipes and set(doc["seconds"]) == set(recipes)

    qrels = base.dataset("scifact").qrels("test")
    systems = doc["datasets"]["scifact"]
    assert systems["bm25"]["ndcg@10"] == pytest.approx(
        _ndcg10(qrels, read_run(base.stage_dir("bm25") / "runs" / "scifact.trec")), abs=1e-6)
    for recipe, run in runs.items():
        for system, by_dataset in TrainedModelSource().runs(run.ctx).items():
            assert system.startswith(f"{recipe}/")
            assert systems[system]["ndcg@10"] == pytest.approx(_ndcg10(qrels, by_dataset["scifact"]), abs=1e-6)

    table = (out / "compare.md").read_text()
    for system, values in systems.items():
        assert f"| {system} | {values['ndcg@10']:.3f} ({values['recall@100']:.3f}) |" in table
