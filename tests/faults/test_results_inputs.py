"""Issue 57 item 6: `uniret results render --write` refuses missing or damaged inputs (one error line
naming the file and field, exit 1) and leaves README.md and docs/results.md byte for byte, instead of
blanking a column or ending in a traceback; `results collect` refuses an evaluate manifest that does
not say which datasets the table has."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from uniret.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def copy(tmp_path):
    results, repo = tmp_path / "results", tmp_path / "repo"
    shutil.copytree(REPO / "results", results)
    (repo / "docs").mkdir(parents=True)
    for name in ("README.md", "docs/results.md"):
        shutil.copy(REPO / name, repo / name)
    return results, repo


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


CASES = {
    "bench_deleted": (lambda r: (r / "bench" / "bench.json").unlink(), "bench.json: not found"),
    "bundle_number": (lambda r: _edit(r / "demo.json", lambda d: d.update(bundle=7)), "demo.json [bundle]"),
    "datasets_number": (lambda r: _edit(r / "demo.json", lambda d: d.update(datasets=7)), "demo.json [datasets]"),
    "p50_string": (lambda r: _edit(r / "bench" / "bench.json",
                                   lambda d: d["modes"][json.loads((r / "demo.json").read_text())["served_mode"]]
                                   .update(p50_ms="7")), "p50_ms"),
    "score_string": (lambda r: _edit(r / "evaluate" / "metrics.json",
                                     lambda d: d["datasets"]["scifact"]["bm25"].update({"ndcg@10": "0.6"})),
                     "datasets.scifact.bm25.ndcg@10"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_write_refuses_damaged_inputs_and_changes_nothing(copy, case, capsys, snapshot):
    results, repo = copy
    assert main(["results", "render", "--results", str(results), "--repo", str(repo), "--check"]) == 0
    damage, needle = CASES[case]
    damage(results)
    before = snapshot(repo)
    rc = main(["results", "render", "--write", "--results", str(results), "--repo", str(repo)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("uniret results: error:")]
    assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert needle in lines[0], lines[0]
    assert snapshot(repo) == before


def test_collect_refuses_an_empty_evaluate_manifest(tmp_path, capsys):
    artifacts = tmp_path / "artifacts"
    (artifacts / "evaluate").mkdir(parents=True)
    (artifacts / "evaluate" / "manifest.json").write_text("{}")
    (artifacts / "evaluate" / "metrics.json").write_text(json.dumps({"datasets": {}}))
    (artifacts / "index" / "bundle").mkdir(parents=True)
    (artifacts / "index" / "bundle" / "manifest.json").write_text(json.dumps(
        {"model": {"serve_mode": "hybrid_fast"}, "fusion": {"modes": {"hybrid_fast": {"runs": ["bm25"]}}}}))
    rc = main(["results", "collect", "--artifacts", str(artifacts), "--results", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err, err
    assert "manifest.json" in err and "params.data" in err, err
    assert not (tmp_path / "out").exists()
