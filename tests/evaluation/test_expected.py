"""Expected-score checks: pass within tolerance, fail outside it (both ways), clear file errors."""

from __future__ import annotations

import pytest

from uniret.config.loader import ConfigError
from uniret.evaluation.expected import check_expected, load_expected, not_applicable

REFERENCE = """\
system: bm25
tolerance: 0.015
source: test
datasets:
  scifact: {ndcg@10: 0.676, recall@100: 0.913}
  npl: {ndcg@10: 0.445}
"""


def _metrics(scifact_ndcg: float, npl_ndcg: float = 0.445, recall: float = 0.913) -> dict:
    return {
        "datasets": {
            "scifact": {"bm25": {"ndcg@10": scifact_ndcg, "recall@100": recall}},
            "npl": {"bm25": {"ndcg@10": npl_ndcg}},
        }
    }


@pytest.fixture
def reference(tmp_path):
    path = tmp_path / "bm25.yaml"
    path.write_text(REFERENCE)
    return path


def test_within_tolerance_passes(reference):
    assert check_expected(_metrics(0.676 - 0.0149, npl_ndcg=0.445 + 0.0149), reference) == []


def test_below_tolerance_fails_naming_dataset_metric_and_values(reference):
    failures = check_expected(_metrics(0.650), reference)
    assert len(failures) == 1
    assert "bm25 scifact ndcg@10" in failures[0]
    assert "measured 0.6500" in failures[0] and "expected 0.6760" in failures[0]


def test_above_tolerance_fails_too(reference):
    failures = check_expected(_metrics(0.676, recall=0.95), reference)
    assert [f.split(":")[0] for f in failures] == ["bm25 scifact recall@100"]


def test_missing_dataset_system_or_metric_fails(reference):
    doc = {"datasets": {"scifact": {"bm25": {"ndcg@10": 0.676}}, "npl": {"other": {"ndcg@10": 0.445}}}}
    failures = check_expected(doc, reference)
    assert any("scifact recall@100: not measured" in f for f in failures)
    assert any("npl: system not evaluated" in f for f in failures)
    assert any("dataset not evaluated" in f for f in check_expected({"datasets": {}}, reference))


def test_reference_of_another_recipe_or_an_unevaluated_system_does_not_apply(tmp_path, reference):
    assert not_applicable(_metrics(0.676), load_expected(reference), "hybrid") is None  # no recipe key: every recipe
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(REFERENCE + "recipe: hybrid\n")
    assert not_applicable(_metrics(0.676), load_expected(pinned), "hybrid") is None
    assert "holds for recipe hybrid, this run trains led" in not_applicable(_metrics(0.676), load_expected(pinned), "led")
    only_other = {"datasets": {"scifact": {"dense": {"ndcg@10": 0.6}}}}
    assert "system bm25 was not evaluated" in not_applicable(only_other, load_expected(reference), None)
    # evaluated on one dataset only: it applies, and compare() names the gap
    partial = {"datasets": {"scifact": {"bm25": {"ndcg@10": 0.676, "recall@100": 0.913}}}}
    assert not_applicable(partial, load_expected(reference), None) is None
    assert any("npl: dataset not evaluated" in f for f in check_expected(partial, reference))


@pytest.mark.parametrize(
    "text, message",
    [
        ("system: bm25\ntolerance: 0.01\ndatasets: {scifact: {bleu@4: 0.5}}\n", r"datasets.scifact.bleu@4: unknown metric"),
        ("system: bm25\ntolerance: -1\ndatasets: {scifact: {map: 0.5}}\n", "tolerance: must be >= 0"),
        ("system: bm25\ntolerance: 0.01\ndatasets: {scifact: {map: high}}\n", "datasets.scifact.map: expected a number"),
        ("system: bm25\ntolerance: 0.01\ntolerence: 1\ndatasets: {scifact: {map: 0.5}}\n", "unknown key"),
        ("tolerance: 0.01\ndatasets: {scifact: {map: 0.5}}\n", "system: expected a system name"),
    ],
)
def test_bad_reference_file_names_file_and_key(tmp_path, text, message):
    path = tmp_path / "ref.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        load_expected(path)
    assert str(path) in str(err.value)


def test_missing_reference_file(tmp_path):
    with pytest.raises(ConfigError, match="expected-scores file not found"):
        check_expected({"datasets": {}}, tmp_path / "nope.yaml")


def test_repo_reference_holds_the_issue_values(repo_root):
    ref = load_expected(repo_root / "expected" / "bm25.yaml")
    assert ref.system == "bm25" and ref.tolerance == 0.015
    ndcg = {d: v["ndcg@10"] for d, v in ref.scores.items()}
    assert ndcg == {"scifact": 0.676, "nfcorpus": 0.327, "cranfield": 0.352, "medline": 0.671, "npl": 0.445}
    assert all("recall@100" in v for v in ref.scores.values())


def test_a_subset_key_reads_the_overlap_section(tmp_path):
    path = tmp_path / "novel.yaml"
    path.write_text("system: hybrid_fast\ntolerance: 0.02\ndatasets:\n  scifact:novel: {ndcg@10: 0.73}\n")
    doc = {"datasets": {"scifact": {"hybrid_fast": {"ndcg@10": 0.82}}},
           "overlap": {"scifact": {"seen": {"hybrid_fast": {"ndcg@10": 0.86}},
                                   "novel": {"hybrid_fast": {"ndcg@10": 0.70}}}}}
    failures = check_expected(doc, path)
    assert failures == ["hybrid_fast scifact:novel ndcg@10: measured 0.7000, expected 0.7300 +/- 0.02 "
                        "(off by -0.0300)"]
    doc["overlap"]["scifact"]["novel"]["hybrid_fast"]["ndcg@10"] = 0.74
    assert check_expected(doc, path) == []
    assert "dataset not evaluated" in check_expected({"datasets": doc["datasets"]}, path)[0]
