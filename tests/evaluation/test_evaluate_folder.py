"""`uniret evaluate --data DIR --datasets a,b --bundle B --checkpoint C` on a BEIR folder made here:
no DAG artifacts, BM25 built on the fly, the evaluate stage's outputs; bad folders fail cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

from uniret.cli import main
from uniret.core.runs import read_run

REPO = Path(__file__).resolve().parents[2]
# "scifact" on purpose: the tiny bundle was built on SciFact, but this folder holds other documents,
# so the bundle's own index must not be used for it (and it is the in-domain set of the macro split)
DATASETS = ["scifact", "beta"]
DOCS = [
    ("d1", "Vitamin D", "Vitamin D supplements increase bone mineral density in older adults."),
    ("d2", "Protein folding", "Chaperone proteins help newly made proteins fold correctly inside cells."),
    ("d3", "Sleep", "Sleep deprivation impairs memory consolidation in the hippocampus."),
    ("d4", "Exercise", "Aerobic exercise lowers blood pressure and improves cardiovascular health."),
    ("d5", "Insulin", "Insulin resistance is a hallmark of type 2 diabetes and obesity."),
    ("d6", "Antibiotics", "Overuse of antibiotics drives bacterial resistance in hospitals."),
    ("d7", "Smoking", "Tobacco smoking is the leading cause of lung cancer."),
    ("d8", "Coffee", "Moderate coffee intake is not linked to heart disease."),
]
QUERIES = [
    ("q1", "does vitamin D improve bone density"),
    ("q2", "how do proteins fold in the cell"),
    ("q3", "insulin resistance in diabetes"),
    ("q4", "smoking and lung cancer risk"),
    ("q5", "antibiotic resistance of bacteria"),
]
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d5", 2), ("q4", "d7", 1), ("q5", "d6", 1), ("q5", "d4", 1)]
METRICS = {"ndcg@10": ("ndcg_cut.10", "ndcg_cut_10"), "recall@100": ("recall.100", "recall_100"), "map": ("map", "map")}


def write_dataset(root: Path, name: str, docs=DOCS, queries=QUERIES, qrels=QRELS) -> Path:
    folder = root / name
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels))
    return folder


def evaluate(*args: str) -> int:
    return main(["evaluate", "--params", str(REPO / "params.yaml"), "--profile", "tiny", *args])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("beir")
    for i, name in enumerate(DATASETS):
        write_dataset(root, name, docs=DOCS[i:] + DOCS[:i])  # another corpus order per dataset
    return root


@pytest.fixture(scope="module")
def scored(folder, tiny_bundle, tmp_path_factory):
    """One command: BM25, every bundle mode and the checkpoint's unifier modes on both datasets."""
    checkpoint = tiny_bundle.parent.parent / "warmup" / "model"  # the checkpoint the bundle was built from
    assert checkpoint.is_dir()
    out = tmp_path_factory.mktemp("eval") / "result"
    rc = evaluate("--data", str(folder), "--datasets", ",".join(DATASETS), "--bundle", str(tiny_bundle),
                  "--checkpoint", str(checkpoint), "--recipe", "unifier", "--out", str(out))
    assert rc == 0
    return out


@pytest.mark.slow
def test_one_command_scores_bm25_the_bundle_and_the_checkpoint(scored):
    doc = json.loads((scored / "metrics.json").read_text())
    manifest = json.loads((scored / "manifest.json").read_text())
    for dataset in DATASETS:
        systems = set(doc["datasets"][dataset])
        assert {"bm25", "dense", "lexical", "uni", "hybrid"} <= systems
        assert {"unifier/dense", "unifier/lexical", "unifier/uni", "unifier/hybrid"} <= systems
        assert doc["num_queries"][dataset] == len(QUERIES)
    assert manifest["sources"]["bundle"]["status"] == manifest["sources"]["trained"]["status"] == "ok"
    # BM25 finds these easy, lexically matching targets (a broken index or run would not)
    assert doc["datasets"]["beta"]["bm25"]["ndcg@10"] > 0.8
    # SciFact is the bundle's own dataset name, so the zero-shot macro is the other dataset alone
    assert doc["zero_shot_macro"]["uni"] == doc["datasets"]["beta"]["uni"]
    # nothing of the work folder is left beside the outputs
    assert sorted(p.name for p in scored.parent.iterdir()) == ["result"]


@pytest.mark.slow
def test_metrics_agree_with_pytrec_eval_on_the_runs_the_command_wrote(scored):
    doc = json.loads((scored / "metrics.json").read_text())
    qrels = {q: {} for q, _, _ in QRELS}
    for q, d, s in QRELS:
        qrels[q][d] = s
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _ in METRICS.values()})
    table = (scored / "metrics.md").read_text()
    for dataset, systems in doc["datasets"].items():
        for system, values in systems.items():
            run = read_run(scored / "runs" / system / f"{dataset}.trec")
            assert set(run) == {q for q, _ in QUERIES}
            assert all(set(hits) <= {d for d, _, _ in DOCS} for hits in run.values()), (system, dataset)
            per_query = evaluator.evaluate(run)
            stored = json.loads((scored / "per_query" / system / f"{dataset}.json").read_text())
            for name, (_, key) in METRICS.items():
                mean = sum(v[key] for v in per_query.values()) / len(qrels)
                assert values[name] == pytest.approx(mean, abs=1e-5), (system, dataset, name)
                for qid, v in per_query.items():
                    assert stored[qid][name] == pytest.approx(v[key], abs=1e-5)
            assert f"| {dataset} | {system} | {len(QUERIES)} | {values['ndcg@10']:.4f} |" in table


def test_a_broken_folder_fails_naming_file_and_line_and_writes_nothing(tmp_path, capsys):
    root = tmp_path / "data"
    folder = write_dataset(root, "broken")
    lines = (folder / "corpus.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-1]  # line 3: JSON cut short
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    write_dataset(root, "badqrels", qrels=[("q1", "d1", 1), ("q2", "d2", "two")])
    out = tmp_path / "out"
    rc = evaluate("--data", str(root), "--datasets", "broken,badqrels", "--out", str(out))
    err = capsys.readouterr().err
    assert rc == 1
    assert f"{folder / 'corpus.jsonl'}:3" in err and "invalid JSON" in err
    assert f"{root / 'badqrels' / 'qrels' / 'test.tsv'}:3 [score]" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_a_missing_split_or_dataset_is_named(tmp_path, capsys):
    root = tmp_path / "data"
    write_dataset(root, "alpha")
    assert evaluate("--data", str(root), "--datasets", "alpha", "--split", "dev", "--out", str(tmp_path / "o")) == 1
    assert "dev.tsv" in capsys.readouterr().err
    assert evaluate("--data", str(root), "--datasets", "alpha,nope", "--out", str(tmp_path / "o")) == 1
    assert "'nope': not found" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_bundle_argument_resolves_production_a_version_or_a_folder(tmp_path):
    from uniret.commands.evaluate_cmd import resolve_bundle
    from uniret.config import Params
    from uniret.registry.integrity import write_checksums
    from uniret.registry.pointer import point_to

    registry = tmp_path / "registry"
    (registry / "bundles" / "v1").mkdir(parents=True)
    (registry / "bundles" / "v1" / "manifest.json").write_text("{}")
    write_checksums(registry / "bundles" / "v1")  # published bundles carry checksums (point_to verifies them)
    params = Params(raw={"registry": {"root": str(registry)}}, profile="tiny", path=tmp_path / "params.yaml")
    with pytest.raises(FileNotFoundError, match="no production bundle"):
        resolve_bundle(params, "production")
    point_to(registry, "v1")
    assert resolve_bundle(params, "production") == registry / "bundles" / "v1"
    assert resolve_bundle(params, "v1") == registry / "bundles" / "v1"
    assert resolve_bundle(params, str(tmp_path)) == tmp_path
    with pytest.raises(FileNotFoundError, match="no bundle 'v2'"):
        resolve_bundle(params, "v2")
