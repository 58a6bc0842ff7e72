"""bm25 stage on tiny slices of the real data: indexes, eval runs, train run, negatives."""

from __future__ import annotations

import json

import pytest

from uniret.core.runs import read_run
from uniret.data.beir import BeirDataset, read_qrels
from uniret.data.dev_split import dev_query_ids
from uniret.data.negatives import iter_negatives
from uniret.data.slicing import write_slice
from uniret.runtime import MANIFEST, VALIDATED_DATA, make_context, read_manifest
from uniret.stages import bm25, run_stage
from uniret.utils.files import atomic_write_json


@pytest.fixture
def validated_datasets_fixture(tiny_ctx, shared_data):
    """Stand-in for the validate stage's outputs (no great-expectations): tiny slices of every
    dataset in use under artifacts/validate/datasets/<name>/ plus a manifest.json."""
    data = tiny_ctx.params.section("data")
    out = tiny_ctx.stage_dir("validate")
    for name in bm25.datasets_in_use(data):
        write_slice(BeirDataset(shared_data / name, name), out / VALIDATED_DATA / name, data.slice)
    atomic_write_json(out / MANIFEST, {"stage": "validate", "fixture": True})
    return tiny_ctx


def test_stage_writes_indexes_runs_and_negatives(validated_datasets_fixture, repo_root):
    ctx = validated_datasets_fixture
    cfg = ctx.params.section("bm25")
    data = ctx.params.section("data")
    metrics = bm25.run(ctx)
    out = ctx.stage_dir("bm25")

    for name in data.eval_datasets:
        ds = ctx.dataset(name)
        assert (out / "indexes" / name).is_dir()
        assert metrics["datasets"][name]["docs"] == sum(1 for _ in ds.iter_corpus())
        run = read_run(out / "runs" / f"{name}.trec")
        eval_qids = set(ds.qrels(data.eval_split))
        assert set(run) <= eval_qids and len(run) >= 0.9 * len(eval_qids)
        assert all(0 < len(hits) <= cfg.top_n for hits in run.values())
        # BM25 on real data finds judged docs: most queries have a relevant doc in the top 100
        found = sum(any(d in ds.qrels(data.eval_split)[q] for d in hits) for q, hits in run.items())
        assert found >= 0.5 * len(run), name

    train = ctx.dataset(data.train_dataset)
    qrels = train.qrels(data.train_split)
    train_run = read_run(out / "train_run.trec")
    assert set(train_run) <= set(qrels)
    records = list(iter_negatives(out / "negatives.jsonl"))
    # the dev carve (data.dev) is held out of training: its queries get no negatives, and its
    # qrels are written beside them
    dev = read_qrels(out / "dev_qrels.tsv")
    assert dev and set(dev) == dev_query_ids(qrels, data.dev) and all(dev[q] == qrels[q] for q in dev)
    judged = {q for q, rels in qrels.items() if any(s > 0 for s in rels.values())}
    assert {r.query_id for r in records} == judged - set(dev)
    for r in records:
        assert r.query == train.queries()[r.query_id]
        assert set(r.positives) == {d for d, s in qrels[r.query_id].items() if s > 0}
        assert not set(r.negatives) & set(r.positives)
        top = sorted(train_run[r.query_id], key=lambda d: -train_run[r.query_id][d])[: cfg.negatives_depth]
        assert set(r.negatives) <= set(top)
        assert len(r.negatives) <= cfg.negatives_per_query
    assert sum(len(r.negatives) == cfg.negatives_per_query for r in records) >= 0.9 * len(records)

    manifest = read_manifest(out)
    assert manifest["metrics"]["train"]["records"] == len(records)
    assert manifest["params"]["bm25"]["top_n"] == cfg.top_n
    assert set(manifest["inputs"]) == {f"dataset/{n}" for n in bm25.datasets_in_use(data)}

    # Deterministic: a fresh context through the CLI's entry point rewrites identical outputs.
    before = (out / "negatives.jsonl").read_bytes(), (out / "runs" / "scifact.trec").read_bytes()
    again = make_context(repo_root / "params.yaml", "tiny", str(ctx.data_root), ctx.artifacts)
    run_stage("bm25", again)
    assert ((out / "negatives.jsonl").read_bytes(), (out / "runs" / "scifact.trec").read_bytes()) == before
    assert json.loads((out / MANIFEST).read_text())["stage"] == "bm25"


def test_stage_without_validated_data_fails_and_writes_nothing(tiny_ctx):
    with pytest.raises(FileNotFoundError, match="validate"):
        bm25.run(tiny_ctx)
    assert not tiny_ctx.stage_dir("bm25").exists()
