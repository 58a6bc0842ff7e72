"""The warmup stage under torchrun (2 CPU processes, gloo) matches the one-process run.

Both runs read the same tiny-profile data, BM25 negatives and params except
`distributed.nproc_per_node`; `batch_size` is the global micro-batch, so both take the same
global batches (the 2 ranks split each one) and in-batch negatives span both ranks
(uniret.training.distributed). Dropout is off in both: with it the ranks would draw other masks
than the single process (a different random stream, not a different computation).

Tolerances, and why: the two runs compute the same sums in a different order (each rank's
backbone sees half the batch; DDP adds the two half-batch gradients; the gather's backward
all-reduces), so they agree to float32 round-off, not bit for bit.
- loss per step: relative difference <= 1e-4 (float32 round-off is ~1e-7 relative; the loss goes
  through 4 steps of updated weights, and the sparse head's log-saturation amplifies small changes).
- parameters after the last step: max |diff| <= 0.25 * lr * steps. Adam moves a parameter by at
  most ~lr per step whatever its gradient's size, so a coordinate whose gradient is pure round-off
  noise (of order 1e-9) can move by a sizable fraction of lr in either run; a quarter of the largest
  possible total move bounds that noise while a real mismatch (a missing gradient term, other
  batches) moves many parameters by about lr * steps. The mean |diff| over all parameters must stay
  below 1e-3 * lr * steps, which only round-off meets.
Measured here (tiny profile, 4 steps, 2 cores under load): loss relative difference <= 1.6e-6;
parameters max |diff| 4.4e-6 (2.2% of lr * steps), mean 4e-11.
"""

from __future__ import annotations

import copy
import csv
import shutil

import pytest
import torch

from uniret.config import Params
from uniret.runtime import MANIFEST, VALIDATED_DATA, StageContext, read_manifest
from uniret.stages import run_stage
from uniret.utils.files import atomic_write_json

pytestmark = pytest.mark.slow

LOSS_RTOL = 1e-4
PARAM_MAX_FRACTION = 0.25  # of lr * steps
PARAM_MEAN_FRACTION = 1e-3
MOVED_OVER_DIFF = 4  # training moves the parameters this many times farther than the two runs part


@pytest.fixture(scope="module")
def bm25_artifacts(tmp_path_factory, repo_root, shared_data):
    """validate (a fixture slice) + the real bm25 stage on tiny SciFact."""
    from uniret.data.beir import BeirDataset
    from uniret.data.slicing import write_slice
    from uniret.runtime import make_context
    from uniret.stages import bm25

    base = make_context(repo_root / "params.yaml", "tiny", str(shared_data), tmp_path_factory.mktemp("ddp") / "base")
    raw = copy.deepcopy(base.params.raw)
    raw["data"]["eval_datasets"] = [raw["data"]["train_dataset"]]  # bm25 indexes only the training set
    ctx = StageContext(Params(raw=raw, profile="tiny", path=base.params.path), base.data_root, base.artifacts)
    data = ctx.params.section("data")
    write_slice(BeirDataset(shared_data / data.train_dataset, data.train_dataset),
                ctx.stage_dir("validate") / VALIDATED_DATA / data.train_dataset, data.slice)
    atomic_write_json(ctx.stage_dir("validate") / MANIFEST, {"stage": "validate", "fixture": True})
    bm25.run(ctx)
    return ctx


def _context(base: StageContext, artifacts, nproc: int) -> StageContext:
    raw = copy.deepcopy(base.params.raw)
    recipe = raw["model"]["recipe"]
    raw["model"]["recipes"][recipe]["model"]["dropout"] = 0.0
    tiny = raw["training"]["profiles"]["tiny"]["warmup"]["train"]
    tiny.update(log_every=1, checkpoint_every=2)  # a loss row per step; checkpoints written by rank 0
    raw["distributed"] = {"nproc_per_node": nproc}
    for stage in ("validate", "bm25"):
        shutil.copytree(base.stage_dir(stage), artifacts / stage)
    return StageContext(Params(raw=raw, profile="tiny", path=base.params.path), base.data_root, artifacts)


def _losses(ctx: StageContext) -> list[float]:
    with open(ctx.stage_dir("warmup") / "metrics" / "train.tsv", encoding="utf-8") as fh:
        return [float(row["loss"]) for row in csv.DictReader(fh, delimiter="\t")]


def _params(ctx: StageContext) -> dict[str, torch.Tensor]:
    from uniret.models.factory import load_model

    model, _ = load_model(ctx.stage_dir("warmup") / "model")
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def runs(bm25_artifacts, tmp_path_factory):
    """(one-process context, two-process context), each after its warmup run."""
    out = {}
    for nproc in (1, 2):
        ctx = _context(bm25_artifacts, tmp_path_factory.mktemp(f"nproc{nproc}"), nproc)
        out[nproc] = (ctx, run_stage("warmup", ctx))
    return out


def test_two_processes_ran_under_torchrun_and_rank0_wrote_the_outputs(runs):
    ctx2, metrics2 = runs[2]
    manifest = read_manifest(ctx2.stage_dir("warmup"))
    assert manifest["params"]["training"] is not None and metrics2 == manifest["metrics"]
    steps = ctx2.params.section("training").warmup.train.max_steps
    assert metrics2["steps"] == steps
    # the ranks read the params this process held, written once beside the work folder
    assert (ctx2.artifacts / ".train" / "warmup.params.yaml").is_file()
    assert not (ctx2.artifacts / ".train" / "warmup").exists()  # work folder (checkpoints) cleaned up
    summary_dirs = list(ctx2.artifacts.glob(".warmup.tmp-*"))
    assert summary_dirs == []  # no half-written output of a second writer


def test_loss_curve_matches_one_process(runs):
    ctx1, _ = runs[1]
    ctx2, _ = runs[2]
    one, two = _losses(ctx1), _losses(ctx2)
    steps = ctx1.params.section("training").warmup.train.max_steps
    assert len(one) == len(two) == steps
    print(f"losses 1 process {one}\nlosses 2 processes {two}")
    assert len(set(one)) > 1  # the curve moves: a frozen model would match trivially
    for step, (a, b) in enumerate(zip(one, two, strict=True), start=1):
        assert abs(a - b) <= LOSS_RTOL * abs(a), f"step {step}: loss {a} (1 process) vs {b} (2 processes)"


def test_parameters_after_training_match_one_process(runs):
    ctx1, _ = runs[1]
    ctx2, _ = runs[2]
    train = ctx1.params.section("training").warmup.train
    budget = train.lr * train.max_steps
    one, two = _params(ctx1), _params(ctx2)
    assert one.keys() == two.keys()
    diffs = torch.cat([(one[k].float() - two[k].float()).abs().flatten() for k in one])
    print(f"params: max |diff| {float(diffs.max()):.3g}, mean {float(diffs.mean()):.3g}, lr*steps {budget:.3g}")
    assert diffs.max() <= PARAM_MAX_FRACTION * budget, f"max |diff| {diffs.max():.3g} vs lr*steps {budget:.3g}"
    assert diffs.mean() <= PARAM_MEAN_FRACTION * budget, f"mean |diff| {diffs.mean():.3g}"
    # and training did move them (so the comparison is not of two untouched copies)
    from uniret.models.factory import build_model

    start = build_model(ctx1.params.section("model").active().model).state_dict()
    moved = max(float((start[k].float() - one[k].float()).abs().max()) for k in one if k in start)
    # the processes' disagreement a small part of that: on torch's AVX2 kernels 8.8e-6 against 6.0e-5 moved
    assert moved > MOVED_OVER_DIFF * float(diffs.max()), f"moved {moved:.3g}, max |diff| {float(diffs.max()):.3g}"
