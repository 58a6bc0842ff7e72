"""evaluate stage on tiny slices of the real data, with BM25 run files of known content."""

from __future__ import annotations

import copy
import json

import pytest

from uniret.config import ConfigError, Params
from uniret.core.errors import StageFailed
from uniret.core.runs import read_run, write_run
from uniret.data.beir import BeirDataset
from uniret.data.slicing import write_slice
from uniret.evaluation.sources import RUN_SOURCES, SourceUnavailable
from uniret.runtime import MANIFEST, VALIDATED_DATA, StageContext, read_manifest
from uniret.stages import evaluate

PERFECT_METRICS = ("ndcg@10", "mrr@10", "map")  # exactly 1.0 for a run listing all relevant docs first


def _perfect(qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """Relevant docs by grade, then one unjudged doc; scores descend with rank."""
    run = {}
    for qid, rels in qrels.items():
        ranked = sorted((d for d, g in rels.items() if g > 0), key=lambda d: (-rels[d], d)) + ["not-judged"]
        run[qid] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    return run


@pytest.fixture
def upstream(tiny_ctx, shared_data, monkeypatch):
    """Validated tiny slices of every eval dataset, and BM25 runs that are perfect on every
    other judged query (sorted ids 0, 2, 4, ...) and empty on the rest. Returns {dataset: share of
    perfect queries}, i.e. the expected value of the PERFECT_METRICS.

    Queries judging a doc whose id equals their own (cranfield 225, medline 5: the id spaces
    collide) go to the empty half, since ignore_identical_ids would drop that relevant hit."""
    # Only BM25 (plus what a test registers): the model sources would encode corpora for minutes.
    for name in [n for n in RUN_SOURCES if n != "bm25"]:
        monkeypatch.delitem(RUN_SOURCES, name)
    data_cfg = tiny_ctx.params.section("data")
    validated = tiny_ctx.stage_dir("validate") / VALIDATED_DATA
    bm25_runs = tiny_ctx.stage_dir("bm25") / "runs"
    expected = {}
    for name in data_cfg.eval_datasets:
        ds = write_slice(BeirDataset(shared_data / name, name), validated / name, data_cfg.slice)
        qrels = ds.qrels(data_cfg.eval_split)
        kept = [q for q in sorted(qrels)[::2] if q not in qrels[q]]
        write_run(bm25_runs / f"{name}.trec", _perfect({q: qrels[q] for q in kept}), tag="bm25")
        expected[name] = len(kept) / len(qrels)
    (tiny_ctx.stage_dir("validate") / MANIFEST).write_text("{}")
    (tiny_ctx.stage_dir("bm25") / MANIFEST).write_text("{}")
    return expected


def _with(ctx: StageContext, **sections) -> StageContext:
    """The same context with some params sections' base values replaced (profile overrides kept)."""
    raw = copy.deepcopy(ctx.params.raw)
    for name, values in sections.items():
        raw[name] = {**raw.get(name, {}), **values}
    return StageContext(Params(raw=raw, profile=ctx.profile, path=ctx.params.path), ctx.data_root, ctx.artifacts)


def _unsliced(ctx: StageContext, **sections) -> StageContext:
    """A context whose data section has no slice (so reference checks apply)."""
    out = _with(ctx, **sections)
    out.params.raw["data"]["slice"] = {"max_queries": None, "max_docs": None}
    out.params.raw["data"].pop("profiles", None)
    return out


def test_metrics_json_md_and_per_query(tiny_ctx, upstream):
    result = evaluate.run(tiny_ctx)
    out = tiny_ctx.stage_dir("evaluate")
    doc = json.loads((out / "metrics.json").read_text())
    assert set(doc) == {"datasets", "macro", "zero_shot_macro", "num_queries", "overlap", "newest_traffic"}
    assert doc["newest_traffic"] == {"status": "skipped",  # no feedback stage ran: nothing of the newest day
                                     "reason": "no feedback stage output (artifacts/feedback has no manifest)"}
    assert {k: v for k, v in result.items() if k != "expected"} == doc
    # the train dataset's test queries, split by their overlap with its train split, scored apart
    overlap = doc["overlap"]["scifact"]
    counts = overlap["counts"]
    assert counts["seen"] + counts["novel"] == doc["num_queries"]["scifact"] and set(overlap) >= {"seen", "novel"}
    rows = json.loads((out / "per_query" / "bm25" / "scifact.json").read_text())
    ds = tiny_ctx.dataset("scifact")
    from uniret.data.overlap import overlap_split

    split = overlap_split(ds.queries(), ds.qrels("train"), ds.qrels("test"))
    if split.novel:
        assert overlap["novel"]["bm25"]["ndcg@10"] == pytest.approx(
            sum(rows[q]["ndcg@10"] for q in split.novel) / len(split.novel), abs=1e-6)
    assert list(doc["overlap"]) == ["scifact"]  # the zero-shot sets have no train split here

    for name, share in upstream.items():
        bm25 = doc["datasets"][name]["bm25"]
        assert sorted(bm25) == sorted(["ndcg@10", "mrr@10", "recall@100", "recall@1000", "map"])
        for metric in PERFECT_METRICS:
            assert bm25[metric] == pytest.approx(share, abs=1e-6), (name, metric)
        per_query = json.loads((out / "per_query" / "bm25" / f"{name}.json").read_text())
        assert len(per_query) == doc["num_queries"][name]
        assert sum(v["ndcg@10"] == 1.0 for v in per_query.values()) == round(share * len(per_query))

    train = tiny_ctx.params.section("data").train_dataset
    zero_shot = [d for d in upstream if d != train]
    assert doc["macro"]["bm25"]["ndcg@10"] == pytest.approx(sum(upstream.values()) / len(upstream), abs=1e-6)
    assert doc["zero_shot_macro"]["bm25"]["map"] == pytest.approx(
        sum(upstream[d] for d in zero_shot) / len(zero_shot), abs=1e-6
    )

    table = (out / "metrics.md").read_text()
    assert "| dataset | system | queries | ndcg@10 | mrr@10 | recall@100 | recall@1000 | map |" in table
    nf = doc["datasets"]["nfcorpus"]["bm25"]["ndcg@10"]
    assert f"| nfcorpus | bm25 | {doc['num_queries']['nfcorpus']} | {nf:.4f} |" in table
    assert "| **macro** | bm25 |" in table and "| **zero-shot macro** | bm25 |" in table
    assert f"| scifact (novel) | bm25 | {counts['novel']} |" in table

    manifest = read_manifest(out)
    assert manifest["sources"]["bm25"]["status"] == "ok"
    assert manifest["expected"]["status"] == "skipped" and "sliced" in manifest["expected"]["reason"]
    assert manifest["metrics"]["macro"] == doc["macro"]
    assert "bm25_runs" in manifest["inputs"] and "validated_data" in manifest["inputs"]


class _Oracle:
    """An optional source standing in for a trained model: perfect runs, saved by evaluate."""

    name = "oracle"
    required = False
    save_runs = True
    available = True

    def inputs(self, ctx):
        return {}

    def runs(self, ctx):
        if not self.available:
            raise SourceUnavailable("artifacts/index: not built")
        data_cfg = ctx.params.section("data")
        return {"oracle": {d: _perfect(ctx.dataset(d).qrels(data_cfg.eval_split)) for d in data_cfg.eval_datasets}}


def test_registered_optional_source_is_scored_and_its_runs_saved(tiny_ctx, upstream, monkeypatch):
    monkeypatch.setitem(RUN_SOURCES, "oracle", _Oracle)
    # keep the oracle perfect on queries that judge a doc with their own id (see `upstream`)
    doc = evaluate.run(_with(tiny_ctx, evaluate={"ignore_identical_ids": False}))
    out = tiny_ctx.stage_dir("evaluate")
    for name in upstream:
        assert all(doc["datasets"][name]["oracle"][m] == 1.0 for m in PERFECT_METRICS)
        saved = read_run(out / "runs" / "oracle" / f"{name}.trec")
        assert len(saved) == doc["num_queries"][name]
    assert not (out / "runs" / "bm25").exists()  # BM25 runs stay in the bm25 stage
    assert "| **macro** | oracle |  | 1.0000 | 1.0000 |" in (out / "metrics.md").read_text()


def test_unavailable_optional_source_is_skipped(tiny_ctx, upstream, monkeypatch):
    monkeypatch.setattr(_Oracle, "available", False)
    monkeypatch.setitem(RUN_SOURCES, "oracle", _Oracle)
    doc = evaluate.run(tiny_ctx)
    assert list(doc["macro"]) == ["bm25"]
    assert read_manifest(tiny_ctx.stage_dir("evaluate"))["sources"]["oracle"]["status"] == "skipped"


def test_missing_bm25_fails_and_writes_nothing(tiny_ctx, upstream):
    (tiny_ctx.stage_dir("bm25") / "runs" / "npl.trec").unlink()
    with pytest.raises(SourceUnavailable, match="npl"):
        evaluate.run(tiny_ctx)
    assert not tiny_ctx.stage_dir("evaluate").exists()


def _reference(tmp_path, value: float) -> str:
    path = tmp_path / "ref.yaml"
    path.write_text(f"system: bm25\ntolerance: 0.01\ndatasets:\n  scifact: {{ndcg@10: {value}}}\n")
    return str(path)


def test_reference_check_on_unsliced_data(tiny_ctx, upstream, tmp_path):
    measured = upstream["scifact"]
    ok = _unsliced(tiny_ctx, evaluate={"expected_scores": [_reference(tmp_path, measured)]})
    assert evaluate.run(ok)["expected"] == {
        "files": [str(tmp_path / "ref.yaml")],
        "failures": [],
        "skipped": [],
        "status": "pass",
    }

    miss = _unsliced(tiny_ctx, evaluate={"expected_scores": [_reference(tmp_path, measured + 0.2)]})
    result = evaluate.run(miss)  # not strict: recorded, not raised
    manifest = read_manifest(miss.stage_dir("evaluate"))
    assert result["expected"]["status"] == manifest["expected"]["status"] == "fail"
    assert manifest["expected"]["failures"][0].startswith("bm25 scifact ndcg@10: measured")


def test_strict_reference_miss_fails_the_stage_and_keeps_old_outputs(tiny_ctx, upstream, tmp_path):
    evaluate.run(tiny_ctx)
    before = (tiny_ctx.stage_dir("evaluate") / "metrics.json").read_text()
    strict = _unsliced(
        tiny_ctx, evaluate={"expected_scores": [_reference(tmp_path, 0.0)], "strict_expected": True}
    )
    with pytest.raises(StageFailed, match="bm25 scifact ndcg@10"):
        evaluate.run(strict)
    assert (tiny_ctx.stage_dir("evaluate") / "metrics.json").read_text() == before


def test_missing_reference_file_fails_before_any_work(tiny_ctx, upstream):
    # Unsliced data: the reference check will run, so a missing file fails before any encoding.
    ctx = _unsliced(tiny_ctx, evaluate={"expected_scores": ["expected/nope.yaml"]})
    with pytest.raises(FileNotFoundError, match="nope.yaml"):
        evaluate.run(ctx)
    assert not ctx.stage_dir("evaluate").exists()
    # Sliced data (tiny): the check is skipped, so the missing file does not matter.
    sliced = _with(tiny_ctx, evaluate={"expected_scores": ["expected/nope.yaml"]})
    assert evaluate.run(sliced)["expected"]["status"] == "skipped"


def test_sources_param_selects_and_rejects(tiny_ctx, upstream, monkeypatch):
    monkeypatch.setitem(RUN_SOURCES, "oracle", _Oracle)
    only_bm25 = _with(tiny_ctx, evaluate={"sources": ["bm25"]})
    doc = evaluate.run(only_bm25)
    assert set(doc["macro"]) == {"bm25"}  # the registered oracle source was not scored
    bad = _with(tiny_ctx, evaluate={"sources": ["bm25", "nope"]})
    with pytest.raises(ConfigError, match="nope"):
        evaluate.run(bad)
