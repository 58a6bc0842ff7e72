"""lab/trees_ab.py (E104): each server runs its own tree's serve_threads.py with that tree's src/ first on
PYTHONPATH, and the summary pairs each server's steady rounds per tree."""

from __future__ import annotations

from pathlib import Path


def test_each_tree_serves_from_its_own_source(lab_script, tmp_path):
    ab = lab_script("trees_ab")
    argv, env = ab.server_command(Path("/x/before"), Path("/b"), 500, Path("/d"), tmp_path / "before-1.json")
    assert argv[1] == "/x/before/lab/serve_threads.py" and argv[2] == "/b"
    assert env["PYTHONPATH"].split(":")[:2] == ["/x/before/src", "/x/before/lab"]
    assert argv[argv.index("--params") + 1] == "/x/before/params.yaml" and argv[argv.index("--requests") + 1] == "500"
    assert argv[argv.index("--modes") + 1:argv.index("--requests")] == ["bm25", "hybrid_fast"] * 3


def test_the_summary_reads_each_trees_steady_rounds(lab_script, server_rounds, tmp_path):
    ab = lab_script("trees_ab")
    server_rounds(tmp_path, "before-1", [900.0, 1500.0, 1600.0])
    server_rounds(tmp_path, "after-1", [1000.0, 2400.0, 2500.0])
    summary = ab.summarize(tmp_path)
    assert summary["forms"]["after"]["ratio_range"] == [0.8, 1.0]
    assert summary["forms"]["before"]["ratio_mean"] == round((0.5 + 0.64) / 2, 3)
    assert summary["forms"]["after"]["hybrid_fast_qps_mean"] == 2450.0
