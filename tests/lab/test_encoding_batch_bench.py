"""lab/encoding_batch.py measures each (encoder, batch, ONNX arena setting) in its own process and
writes every row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_encoding_batch_probe_reports_each_encoder_and_batch(repo_root, shared_data, tiny_bundle, tmp_path):
    manifest = json.loads((tiny_bundle / "manifest.json").read_text())
    checkpoint = Path(manifest["model"]["checkpoint"])
    out = tmp_path / "encoding_batch.json"
    subprocess.run([sys.executable, str(repo_root / "lab" / "encoding_batch.py"), "--checkpoint", str(checkpoint),
                    "--bundle", str(tiny_bundle), "--data", str(shared_data), "--batches", "8", "--docs", "24",
                    "--rounds", "1", "--arena", "on", "pattern", "off", "shrink", "--out", str(out)], check=True, cwd=tmp_path, timeout=900)
    result = json.loads(out.read_text())
    # committed results name no machine's folders: the bundle lies outside the working folder here
    assert result["bundle"] == "artifacts/index/bundle" and not Path(result["checkpoint"]).is_absolute()
    rows = result["rows"]
    # one batch size: each row is a process of about 7 s, and batches enter the rows' product as arenas do (E59)
    assert [(r["encoder"], r["batch"], r.get("arena")) for r in rows] == [
        ("torch", 8, None), ("onnx", 8, "on"), ("onnx", 8, "pattern"), ("onnx", 8, "off"), ("onnx", 8, "shrink")]
    assert all(r["docs"] == 24 and r["docs_per_s"] > 0 for r in rows)
    graph = "doc.int8.onnx" if (tiny_bundle / "onnx" / "doc.int8.onnx").is_file() else "doc.onnx"
    assert {r["graph"] for r in rows if r["encoder"] == "onnx"} == {graph}
    assert all(0 < r["peak_rss_gb"] < 50 for r in rows)
