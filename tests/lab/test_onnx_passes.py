"""lab/onnx_passes.py times the mine stage's documents and the static tower's teacher texts through
torch and through onnxruntime, and reports how far the two encodings are apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_onnx_passes_times_both_passes_each_way(repo_root, shared_data, tiny_bundle, tmp_path):
    checkpoint = Path(json.loads((tiny_bundle / "manifest.json").read_text())["model"]["checkpoint"])
    out = tmp_path / "onnx_passes.json"
    subprocess.run([sys.executable, str(repo_root / "lab" / "onnx_passes.py"), "--checkpoint", str(checkpoint),
                    "--data", str(shared_data), "--docs", "20", "--length", "32", "--texts", "30",
                    "--query-length", "16", "--batch", "8", "--rounds", "1", "--out", str(out)],
                   check=True, cwd=repo_root, timeout=600)
    result = json.loads(out.read_text())
    docs, teacher = result["mine_docs"], result["teacher_texts"]
    assert (docs["docs"], docs["length"], teacher["texts"], teacher["query_length"]) == (20, 32, 30, 16)
    for rates in (docs["docs_per_s"], teacher["texts_per_s"]):
        assert [len(v) for v in rates.values()] == [1, 1] and all(v[0] > 0 for v in rates.values())
    # the same encodings either way: the speed is the only difference
    assert docs["dense_min_cosine"] >= 0.9999 and docs["sparse_min_cosine"] >= 0.9999
    assert teacher["min_cosine"] >= 0.9999
    assert len(docs["onnx_over_torch"]) == len(teacher["onnx_over_torch"]) == 1
    assert result["machine"]["cpu_model"]
