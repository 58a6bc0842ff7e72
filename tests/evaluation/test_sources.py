"""Run sources: BM25 from the bm25 stage's files, optional sources skipped, registry plug-in."""

from __future__ import annotations

import pytest

from uniret.core.runs import write_run
from uniret.evaluation.sources import (
    RUN_SOURCES,
    Bm25Source,
    RunSource,
    SourceUnavailable,
    collect_runs,
    load_source,
)


class _Optional:
    name = "model"
    required = False
    save_runs = True

    def inputs(self, ctx):
        return {}

    def runs(self, ctx):
        raise SourceUnavailable("artifacts/index: not built")


class _Clash(_Optional):
    name = "clash"

    def runs(self, ctx):
        return {"bm25": {}}


def _write_bm25(ctx, datasets):
    folder = ctx.stage_dir("bm25")
    (folder / "runs").mkdir(parents=True)
    (folder / "manifest.json").write_text("{}")
    for ds in datasets:
        write_run(folder / "runs" / f"{ds}.trec", {"q1": {"d1": 2.0, "d2": 1.0}}, tag="bm25")


def test_bm25_source_reads_every_eval_dataset(tiny_ctx):
    datasets = tiny_ctx.params.section("data").eval_datasets
    _write_bm25(tiny_ctx, datasets)
    runs = Bm25Source().runs(tiny_ctx)
    assert list(runs) == ["bm25"]
    assert sorted(runs["bm25"]) == sorted(datasets)
    assert runs["bm25"][datasets[0]] == {"q1": {"d1": 2.0, "d2": 1.0}}


def test_bm25_missing_stage_or_dataset_is_an_error(tiny_ctx):
    with pytest.raises(SourceUnavailable, match="run `uniret bm25` first"):
        collect_runs(tiny_ctx, [Bm25Source()])
    _write_bm25(tiny_ctx, ["scifact"])
    with pytest.raises(SourceUnavailable, match="no BM25 run for eval dataset 'nfcorpus'"):
        Bm25Source().runs(tiny_ctx)


def test_optional_source_is_skipped_and_reported(tiny_ctx):
    _write_bm25(tiny_ctx, tiny_ctx.params.section("data").eval_datasets)
    runs, report = collect_runs(tiny_ctx, [Bm25Source(), _Optional()])
    assert list(runs) == ["bm25"]
    assert report["bm25"] == {"status": "ok", "systems": ["bm25"]}
    assert report["model"]["status"] == "skipped" and "not built" in report["model"]["reason"]


def test_two_sources_naming_one_system_is_an_error(tiny_ctx):
    _write_bm25(tiny_ctx, tiny_ctx.params.section("data").eval_datasets)
    with pytest.raises(ValueError, match="already scored: bm25"):
        collect_runs(tiny_ctx, [Bm25Source(), _Clash()])


def test_registry_plugs_in_a_source_with_one_entry(monkeypatch):
    assert isinstance(load_source("bm25"), Bm25Source)
    monkeypatch.setitem(RUN_SOURCES, "model", _Optional)
    source = load_source("model")
    assert isinstance(source, RunSource) and source.name == "model"
    with pytest.raises(KeyError, match="unknown run source 'nope'"):
        load_source("nope")
