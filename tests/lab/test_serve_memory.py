"""lab/serve_memory.py (E92) on the tiny bundle: one round, one worker, this checkout's src."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_serve_memory_reports_each_process_and_no_torch(lab_script, tiny_bundle, repo_root, tmp_path):
    serve_memory = lab_script("serve_memory")
    out = tmp_path / "serve_memory.json"
    result = serve_memory.main([str(tiny_bundle), "--rounds", "1", "--workers", "1", "--profile", "tiny",
                                "--variant", f"this={repo_root / 'src'}", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    (run,) = result["runs"]["this"]
    assert run["ready_s"] > 0 and run["processes"] == len(run["rss_mb_by_process"]) >= 1
    assert run["rss_mb_total"] == pytest.approx(sum(run["rss_mb_by_process"]), abs=0.1) and run["rss_mb_total"] > 50
    assert run["processes_with_libtorch"] == 0  # serving never loads torch (tests/serving/test_serving_imports.py)
    assert result["machine"]["cpu_cores"] >= 1 and result["bundle"] == tiny_bundle.name
    assert result["variants"]["this"]["commit"]  # the tree's commit, not its path
