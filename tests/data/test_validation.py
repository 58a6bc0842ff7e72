"""Structural pass + great-expectations suites on small slices of real SciFact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from uniret.config.sections import SliceConfig, ValidateConfig
from uniret.data.beir import BeirDataset
from uniret.data.slicing import write_slice
from uniret.data.tables import DOC_KNOWN, QUERY_KNOWN, load_tables
from uniret.data.validation import GxSession, validate_dataset

CFG = ValidateConfig(min_score=1, max_score=4)


@pytest.fixture(scope="module")
def clean(tmp_path_factory, shared_data) -> Path:
    """A 40-doc slice of real SciFact (root/sf)."""
    root = tmp_path_factory.mktemp("clean")
    write_slice(BeirDataset(shared_data / "scifact"), root / "sf", SliceConfig(max_queries=5, max_docs=40, seed=5))
    return root


@pytest.fixture
def session() -> GxSession:
    """A fresh context per test: a session validates each dataset name once."""
    return GxSession()


def _copy(clean: Path, tmp_path: Path) -> Path:
    shutil.copytree(clean / "sf", tmp_path / "sf")
    return tmp_path / "sf"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def test_clean_slice_passes(clean, session):
    report = validate_dataset(session, load_tables(clean, "sf"), CFG)
    assert report.ok, report.problems(True)
    assert report.rows["corpus.jsonl"] == 40
    kinds = {c.file for c in report.checks}
    assert kinds == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/train.tsv"}
    assert len(report.checks) >= 25


def test_every_failure_in_a_dataset_is_reported(clean, session, tmp_path):
    ds = _copy(clean, tmp_path)
    corpus = _lines(ds / "corpus.jsonl")
    first = json.loads(corpus[0])
    empty = json.loads(corpus[1]) | {"text": "  \t "}
    corpus[1] = json.dumps(empty) + "\n"
    corpus.append(json.dumps(first) + "\n")  # duplicate id on the last line
    (ds / "corpus.jsonl").write_text("".join(corpus), encoding="utf-8")
    qrels = _lines(ds / "qrels" / "test.tsv")
    qid = qrels[1].split("\t")[0]
    qrels += [f"{qid}\tNO-SUCH-DOC\t1\n", f"{qid}\t{first['_id']}\t9\n"]
    (ds / "qrels" / "test.tsv").write_text("".join(qrels), encoding="utf-8")

    report = validate_dataset(session, load_tables(tmp_path, "sf"), CFG)
    assert not report.ok and not report.structural
    failed = {c.description: c for c in report.checks if not c.success}
    dup = failed["document ids are unique"]
    assert dup.unexpected_count == 2 and any(f"_id={first['_id']}" in e for e in dup.examples)
    assert any(e.startswith(f"line {len(corpus)} ") for e in dup.examples)
    assert "line 2 " in failed["document text is not empty (at least 1 chars after strip)"].examples[0]
    dangling = failed["every qrels corpus-id is in corpus.jsonl"]
    assert dangling.file == "qrels/test.tsv" and "corpus-id=NO-SUCH-DOC" in dangling.examples[0]
    score = failed["score is in [1, 4]"]
    assert score.unexpected_count == 1 and f"line {len(qrels)} " in score.examples[0]
    messages = report.problems(include_drift=True)
    assert len(messages) == 4
    assert all(m.startswith("sf: ") and str(ds) in m for m in messages)


def test_structural_problem_skips_only_what_depends_on_it(clean, session, tmp_path):
    ds = _copy(clean, tmp_path)
    corpus = _lines(ds / "corpus.jsonl")
    corpus[4] = json.dumps(json.loads(corpus[4]) | {"text": ["not", "a", "string"]}) + "\n"
    (ds / "corpus.jsonl").write_text("".join(corpus), encoding="utf-8")

    tables = load_tables(tmp_path, "sf")
    assert not tables.single("corpus").ok
    assert all(QUERY_KNOWN in t.frame and DOC_KNOWN not in t.frame for t in tables.of_kind("qrels"))
    report = validate_dataset(session, tables, CFG)
    assert [str(p) for p in report.structural] == [f"{ds / 'corpus.jsonl'}:5 [text]: expected a string, got list"]
    assert {c.file for c in report.checks} == {"queries.jsonl", "qrels/test.tsv", "qrels/train.tsv"}
    assert all(c.success for c in report.checks)


def test_missing_required_split_and_dataset(clean, session):
    tables = load_tables(clean, "sf", {"dev": "data.eval_split"})
    assert [p.message for p in tables.problems] == ["split 'dev' (data.eval_split) not found"]
    missing = load_tables(clean, "nope")
    assert missing.files == [] and "dataset 'nope' not found" in str(missing.problems[0])


def test_data_docs_render_into_our_folder(clean, tmp_path):
    session = GxSession()
    validate_dataset(session, load_tables(clean, "sf"), CFG)
    index = session.build_docs(tmp_path / "docs")
    assert index.is_file()
    pages = {p.relative_to(tmp_path / "docs").as_posix() for p in (tmp_path / "docs").rglob("*.html")}
    assert "expectations/sf/corpus_jsonl.html" in pages
    assert any(p.startswith("validations/sf/") for p in pages)
    assert "document ids are unique" in (tmp_path / "docs" / "expectations/sf/corpus_jsonl.html").read_text()


def test_score_0_is_a_judgment_of_non_relevance_by_default(clean, session, tmp_path):
    """Hand-labelled sets (and BEIR's TREC-COVID, ...) write `0` for "judged, not relevant": the
    default validate settings accept it, evaluation counts it as not relevant, and a qrels file of
    zeros alone is refused (nothing to train or evaluate on)."""
    from uniret.evaluation.metrics import evaluate_run

    ds = _copy(clean, tmp_path)
    qrels = _lines(ds / "qrels" / "test.tsv")
    qid, relevant, _ = qrels[1].rstrip("\n").split("\t")
    other = next(json.loads(line)["_id"] for line in _lines(ds / "corpus.jsonl")
                 if json.loads(line)["_id"] not in {r.split("\t")[1] for r in qrels[1:]})
    (ds / "qrels" / "test.tsv").write_text("".join(qrels) + f"{qid}\t{other}\t0\n", encoding="utf-8")
    defaults = ValidateConfig()
    assert defaults.min_score == 0
    report = validate_dataset(session, load_tables(tmp_path, "sf"), defaults)
    assert report.ok, report.problems(True)
    assert any(c.description.startswith("score is in [0, 4] (0: judged not relevant)") and c.success
               for c in report.checks)

    judged = BeirDataset(ds).qrels("test")
    assert judged[qid][other] == 0
    run = {qid: {other: 2.0, relevant: 1.0}}  # the non-relevant one ranked first
    without = {qid: {d: s for d, s in judged[qid].items() if d != other}}
    scored, _ = evaluate_run({qid: judged[qid]}, run, ["ndcg@10", "recall@100"])
    unjudged, _ = evaluate_run(without, run, ["ndcg@10", "recall@100"])
    assert scored == unjudged and scored[qid]["ndcg@10"] < 1.0 and scored[qid]["recall@100"] == 1.0

    zeros = "".join(qrels[:1]) + "".join(f"{line.split(chr(9))[0]}\t{line.split(chr(9))[1]}\t0\n" for line in qrels[1:])
    (ds / "qrels" / "test.tsv").write_text(zeros, encoding="utf-8")
    report = validate_dataset(GxSession(), load_tables(tmp_path, "sf"), defaults)
    failed = [c.description for c in report.checks if not c.success]
    assert failed == ["at least one pair is judged relevant (score >= 1)"]
