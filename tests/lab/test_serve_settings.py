"""lab/serve_settings.py (issue 11's sweep of `serve` settings) on the tiny bundle: two settings, one level."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_each_setting_gets_its_own_server_and_its_figures(lab_script, tiny_bundle, repo_root, shared_data, tmp_path):
    serve_settings = lab_script("serve_settings")
    out = tmp_path / "serve_settings.json"
    configs = {"defaults": {}, "onnx_threads_1": {"onnx_threads": 1}}
    result = serve_settings.main([str(tiny_bundle), "--data", str(shared_data), "--params", str(repo_root / "params.yaml"),
                                  "--profile", "tiny", "--configs", json.dumps(configs), "--clients", "1",
                                  "--requests", "20", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert [row["name"] for row in result["settings"]] == list(configs)
    for row, serve in zip(result["settings"], configs.values(), strict=True):
        assert row["serve"] == serve
        level = row["levels"]["1"]
        assert set(level) == set(serve_settings.FIELDS)
        assert level["failed"] == 0 and level["qps"] > 0 and 0 < level["p50_ms"] <= level["p95_ms"] <= level["p99_ms"]
        assert level["server_rss_mb"] > 0
    assert result["machine"]["cpu_cores"] >= 1 and result["requests_per_level"] == 20
