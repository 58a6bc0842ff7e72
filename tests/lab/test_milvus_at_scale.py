"""lab/milvus_at_scale.py on the tiny bundle: exported into a fresh Milvus Lite file, hybrid_fast and its
routes searched through Milvus and in process, each Milvus run's top-10 agreement with the in-process one."""

from __future__ import annotations

import argparse

import pytest


@pytest.mark.slow
def test_the_bundle_is_exported_and_both_engines_timed_with_their_agreement(lab_script, tiny_bundle, shared_data,
                                                                            tmp_path, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    script = lab_script("milvus_at_scale")
    out = script.measure(argparse.Namespace(bundle=str(tiny_bundle), queries=6, warmup=1, params="params.yaml",
                                            data=str(shared_data), work=str(tmp_path)))
    assert out["export"]["num_docs"] == out["docs"] > 0 and out["export_seconds"] > 0
    assert out["milvus_lite_rss_mb"] > 0  # the Lite server a .db URI starts, a child of this process
    for mode in script.MODES:
        for engine in ("milvus", "in_process"):
            assert out[engine][mode]["n"] == 6 and 0 < out[engine][mode]["p50_ms"] <= out[engine][mode]["p95_ms"]
        # the tiny corpus is below every pruning size: both engines search exactly
        assert out["milvus"][mode]["top10_agreement_with_in_process"] >= 0.9
    assert out["in_process"]["bm25"]["p50_ms"] > 0 and set(out["p50_vs_lucene_bm25"]) == {
        f"{e}/{m}" for e in ("milvus", "in_process") for m in script.MODES}
    assert list(tmp_path.iterdir()) == []  # the Milvus Lite file went with its folder
