"""lab/mine_int8.py encodes the same documents in fp32 and dynamic int8 and reports both heads' drift."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_mine_int8_probe_times_both_and_compares_each_head(repo_root, shared_data, tiny_bundle, tmp_path):
    checkpoint = Path(json.loads((tiny_bundle / "manifest.json").read_text())["model"]["checkpoint"])
    out = tmp_path / "mine_int8.json"
    subprocess.run([sys.executable, str(repo_root / "lab" / "mine_int8.py"), "--checkpoint", str(checkpoint),
                    "--data", str(shared_data), "--docs", "20", "--length", "32", "--batch", "8", "--rounds", "1",
                    "--out", str(out)], check=True, cwd=repo_root, timeout=600)
    result = json.loads(out.read_text())
    assert result["docs"] == 20 and result["length"] == 32
    assert [len(v) for v in result["docs_per_s"].values()] == [1, 1] and all(
        v[0] > 0 for v in result["docs_per_s"].values())
    # int8 moves the vectors but keeps them the same documents' (a cosine of 1 would mean nothing was quantised)
    for head in ("dense_cosine", "sparse_cosine"):
        assert 0.3 < result[head]["min"] <= result[head]["mean"] < 1.0
    assert result["machine"]["cpu_model"]
