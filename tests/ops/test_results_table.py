"""The results tables: README.md and docs/results.md hold exactly what results/ renders to, and
`uniret results collect` turns any demo's artifacts into those files (served mode read, not assumed)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from uniret.core.errors import DataError
from uniret.ops.results_collect import collect
from uniret.ops.results_table import TARGETS, fill, render_blocks, stale, write

REPO = Path(__file__).resolve().parents[2]


def test_the_committed_tables_are_the_rendering_of_the_committed_results():
    blocks = render_blocks(REPO / "results")
    assert stale(REPO, blocks) == [], "run `uniret results render --write` and commit README.md and docs/results.md"
    demo = json.loads((REPO / "results" / "demo.json").read_text())
    assert f"**{demo['served_mode']}** (served)" in blocks["headline"]


def _write(path: Path, doc) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")


DATASETS = ["scifact", "nfcorpus", "npl"]
# per-query nDCG@10 around these means: the served fusion above its static heads above BM25
MEANS = {"hybrid_fast": 0.60, "dense_static": 0.50, "lexical_static": 0.45, "bm25": 0.40, "hybrid_bm25": 0.62}


@pytest.fixture
def artifacts(tmp_path) -> Path:
    """A demo's artifacts as the DAG leaves them, for a bundle serving hybrid_fast."""
    root = tmp_path / "artifacts"
    rng = random.Random(3)
    metrics: dict = {"datasets": {}, "macro": {}, "zero_shot_macro": {}}
    for dataset in DATASETS:
        metrics["datasets"][dataset] = {}
        for system, mean in MEANS.items():
            rows = {f"q{i}": {"ndcg@10": min(1.0, max(0.0, mean + rng.uniform(-0.2, 0.2)))} for i in range(40)}
            _write(root / "evaluate" / "per_query" / system / f"{dataset}.json", rows)
            metrics["datasets"][dataset][system] = {"ndcg@10": sum(r["ndcg@10"] for r in rows.values()) / 40}
    for system in MEANS:
        zs = [metrics["datasets"][d][system]["ndcg@10"] for d in DATASETS[1:]]
        metrics["zero_shot_macro"][system] = {"ndcg@10": sum(zs) / len(zs)}
    novel = [f"q{i}" for i in range(15)]  # the train dataset's test queries that overlap no train query
    metrics["overlap"] = {"scifact": {"rule": "seen: ...; novel: neither", "novel_queries": novel,
                                      "counts": {"seen": 25, "novel": 15}, "seen": {}, "novel": {}}}
    for system in MEANS:
        rows = json.loads((root / "evaluate" / "per_query" / system / "scifact.json").read_text())
        metrics["overlap"]["scifact"]["novel"][system] = {"ndcg@10": sum(rows[q]["ndcg@10"] for q in novel) / 15}
    _write(root / "evaluate" / "metrics.json", metrics)
    (root / "evaluate" / "metrics.md").write_text("# Evaluation (test split)\n")
    _write(root / "evaluate" / "manifest.json", {"profile": "cpu", "seconds": 12.0, "params": {
        "data": {"train_dataset": "scifact", "eval_datasets": DATASETS}}})
    _write(root / "warmup" / "manifest.json", {"seconds": 30.0})
    _write(root / "bench" / "bench.json", {"machine": {"cpu_model": "Test CPU", "cpu_cores_usable": 2, "memory_gb": 8.0}})
    _write(root / "index" / "bundle" / "manifest.json", {
        "model": {"serve_mode": "hybrid_fast", "recipe": "hybrid"},
        "fusion": {"modes": {"hybrid_fast": {"runs": ["bm25", "lexical_static", "dense_static"]}}}})
    return root


def test_collect_reads_the_served_mode_and_its_heads_from_the_bundle(artifacts, tmp_path):
    out = tmp_path / "results"
    demo = collect(artifacts, out, also=["hybrid_bm25"], resamples=200)
    assert demo["served_mode"] == "hybrid_fast" and demo["heads"] == ["lexical_static", "dense_static"]
    assert demo["stage_seconds"] == {"warmup": 30, "evaluate": 12} and demo["commit"] == "unknown"
    assert demo["machine"] == "Test CPU, 2 cores, 8.0 GB"  # the DAG's machine, from its bench stage
    stems = sorted(p.stem for p in (out / "significance").glob("*.json") if p.name != "manifest.json")
    assert stems == ["bm25_vs_hybrid_fast", "dense_static_vs_hybrid_fast", "hybrid_bm25_vs_hybrid_fast",
                     "lexical_static_vs_hybrid_fast"]
    assert (out / "evaluate" / "metrics.json").read_bytes() == (artifacts / "evaluate" / "metrics.json").read_bytes()

    blocks = render_blocks(out)
    head = blocks["headline"]
    assert "| **hybrid_fast** (served) |" in head and "| dense_static (head) |" in head and "| bm25 |" in head
    served_vs_bm25 = next(line for line in head.splitlines() if line.startswith("| served − bm25 |"))
    # an interval per dataset, the zero-shot macro and SciFact's novel queries
    assert served_vs_bm25.count("..") == len(DATASETS) + 2
    # the zero-shot figures lead; the in-domain set follows with its novel queries beside it
    assert (head.index("zero-shot macro") < head.index("nfcorpus") < head.index("npl") < head.index("scifact (in-domain)")
            < head.index("scifact novel (15)"))
    assert "25 of its 40 test queries are seen (seen: ...; novel: neither)" in head
    novel = json.loads((out / "significance" / "bm25_vs_hybrid_fast.json").read_text())["results"]["scifact:novel"]
    means = json.loads((out / "evaluate" / "metrics.json").read_text())["overlap"]["scifact"]["novel"]
    assert novel["per_set"]["scifact:novel"]["queries"] == 15
    assert novel["diff"] == pytest.approx(means["hybrid_fast"]["ndcg@10"] - means["bm25"]["ndcg@10"], abs=1e-5)
    assert f"| **{means['hybrid_fast']['ndcg@10']:.4f}** |" in head.splitlines()[3]
    assert "no `uniret bench` figures" in head
    assert "hybrid_fast vs hybrid_bm25" in blocks["details"]


def test_collect_refuses_a_demo_without_scores_of_a_head_and_changes_nothing(artifacts, tmp_path):
    out = tmp_path / "results"
    collect(artifacts, out, resamples=50)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    manifest = artifacts / "index" / "bundle" / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["fusion"]["modes"]["hybrid_fast"]["runs"].append("uni")
    manifest.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="no scores of uni"):
        collect(artifacts, out, resamples=50)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_write_replaces_only_the_marked_blocks(artifacts, tmp_path):
    collect(artifacts, tmp_path / "results", resamples=50)
    repo = tmp_path / "repo"
    for rel in TARGETS:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        body = "\n".join(f"<!-- results:{n} -->\nold\n<!-- /results:{n} -->" for n in TARGETS[rel])
        (repo / rel).write_text(f"# Title\n\n{body}\n\nAfter.\n")
    blocks = render_blocks(tmp_path / "results")
    assert sorted(write(repo, blocks)) == sorted(TARGETS)
    readme = (repo / "README.md").read_text()
    assert readme.startswith("# Title\n\n<!-- results:headline -->\n") and readme.endswith("\n\nAfter.\n")
    assert "old" not in readme and stale(repo, blocks) == [] and write(repo, blocks) == []


def test_a_file_without_the_block_markers_is_named():
    with pytest.raises(DataError, match=r"README.md: no <!-- results:headline -->"):
        fill("no markers here", {"headline": "x"}, ("headline",), Path("README.md"))


@pytest.mark.parametrize("broken", ["metrics_empty", "metrics_no_served", "bench_empty", "bench_not_json"])
def test_render_refuses_result_files_that_would_blank_a_column(artifacts, tmp_path, broken):
    """Issue 43: an empty or partial metrics.json or bench.json is refused naming the file and field
    (one message, exit 1), never rendered as a table with blank columns."""
    from uniret.cli import main

    out = tmp_path / "results"
    collect(artifacts, out, resamples=50)
    (out / "bench").mkdir(exist_ok=True)
    (out / "bench" / "bench.json").write_text(json.dumps({"modes": {"hybrid_fast": {"p50_ms": 1.0, "p95_ms": 2.0,
                                                                                   "qps": 9.0},
                                                                    "bm25": {"p50_ms": 1.0, "p95_ms": 2.0, "qps": 9.0}}}))
    render_blocks(out)  # whole files render
    target = {"metrics_empty": ("evaluate/metrics.json", "{}", "datasets"),
              "metrics_no_served": ("evaluate/metrics.json", json.dumps({"datasets": {"scifact": {"bm25": {}}}}),
                                    "datasets.scifact.hybrid_fast"),
              "bench_empty": ("bench/bench.json", "{}", "modes.hybrid_fast.p50_ms"),
              "bench_not_json": ("bench/bench.json", "{", "invalid JSON")}[broken]
    (out / target[0]).write_text(target[1])
    with pytest.raises(DataError, match=target[2].replace(".", r"\.")):
        render_blocks(out)
    assert main(["results", "render", "--results", str(out)]) == 1


def test_a_stated_provenance_replaces_the_demo_time_in_the_caption(artifacts, tmp_path):
    out = tmp_path / "results"
    demo = collect(artifacts, out, resamples=50, provenance="the DAG resumed at its mine stage", commit="e6d27d3")
    assert demo["provenance"] == "the DAG resumed at its mine stage"
    assert demo["commit"] == "e6d27d3"  # as stated, not the checkout's HEAD at collection time
    head = render_blocks(out)["headline"]
    assert "Quality: the DAG resumed at its mine stage (Test CPU, 2 cores, 8.0 GB" in head
    assert "its stages took" not in head and "the demo took" not in head
