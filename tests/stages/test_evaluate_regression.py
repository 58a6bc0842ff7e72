"""Slow: the real validate -> bm25 -> evaluate on the whole eval datasets (cpu profile) must land
within tolerance of the independent BM25 references in expected/bm25.yaml."""

from __future__ import annotations

import pytest

from uniret.evaluation.expected import check_expected, load_expected
from uniret.runtime import make_context, read_manifest
from uniret.stages import run_stage


@pytest.mark.slow
def test_bm25_scores_match_references_on_full_data(repo_root, shared_data, tmp_path):
    ctx = make_context(repo_root / "params.yaml", "cpu", str(shared_data), tmp_path / "artifacts")
    ctx.params.raw["evaluate"]["sources"] = ["bm25"]  # no model sources: they would encode 22k docs
    reference_path = repo_root / "expected" / "bm25.yaml"
    reference = load_expected(reference_path)
    assert set(reference.scores) <= set(ctx.params.section("data").eval_datasets)

    for stage in ("validate", "bm25"):
        run_stage(stage, ctx)
    result = run_stage("evaluate", ctx)

    measured = {d: {m: result["datasets"][d]["bm25"][m] for m in refs} for d, refs in reference.scores.items()}
    print("measured vs reference:", {d: (measured[d], reference.scores[d]) for d in measured})
    assert check_expected(result, reference_path) == []
    for dataset, refs in reference.scores.items():
        for metric, ref in refs.items():
            assert abs(measured[dataset][metric] - ref) <= reference.tolerance, (dataset, metric)
    manifest = read_manifest(ctx.stage_dir("evaluate"))
    assert manifest["expected"]["status"] == "pass", manifest["expected"]
