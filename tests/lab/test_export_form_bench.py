"""lab/export_form.py exports a checkpoint in both forms and reports every figure, and the
two forms compute the same function."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_export_form_probe_compares_both_forms_of_one_checkpoint(repo_root, shared_data, tmp_path):
    from uniret.config.models import ModelConfig
    from uniret.models.factory import build_model, save_model

    checkpoint = tmp_path / "model"
    save_model(build_model(ModelConfig(arch="splade", backbone="splade-tiny", query_max_length=16,
                                       doc_max_length=48)), checkpoint)
    out = tmp_path / "export_form.json"
    subprocess.run([sys.executable, str(repo_root / "lab" / "export_form.py"), str(checkpoint),
                    "--data", str(shared_data), "--docs", "40", "--queries", "5", "--rounds", "1",
                    "--out", str(out)], check=True, cwd=tmp_path, timeout=900)
    result = json.loads(out.read_text())
    keys = {f"{form}/{kind}" for form in ("previous", "current") for kind in ("fp32", "int8")}
    assert set(result["doc_docs_per_s"]) == keys and all(r[0] > 0 for r in result["doc_docs_per_s"].values())
    peaks = result["doc_batch_peak_rss_mb"]
    assert set(peaks) == keys and all(mb > 0 for mb in peaks.values())
    # each graph's own process: its peak is not the parent's (which holds the torch model and all graphs)
    assert all(mb < result["parent_peak_rss_mb"] for mb in peaks.values())
    assert set(result["query_batch1_median_ms"]) == {"previous", "current"}
    # SPLADE has no dense head: only the sparse outputs are compared, and they agree
    agreement = result["current_vs_previous_fp32"]
    assert agreement["doc_sparse_min_cosine"] > 0.9999 and agreement["query_sparse_min_cosine"] > 0.9999
    # the current form's cost in bytes: one transposed fp32 copy of the 30,522 x 128 decoder weight
    grown = result["bytes"]["current/doc.onnx"] - result["bytes"]["previous/doc.onnx"]
    assert abs(grown - 30522 * 128 * 4) < 0.02 * 30522 * 128 * 4
