"""The validate stage: happy path on all five real datasets, every kind of bad input, drift."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from uniret import cli
from uniret.config.sections import SliceConfig
from uniret.data.beir import BeirDataset
from uniret.data.slicing import write_slice
from uniret.runtime import read_manifest
from uniret.stages import validate
from uniret.utils.files import hash_path

NAME = "sf_slice"
FIVE = ["scifact", "nfcorpus", "cranfield", "medline", "npl"]


def test_tiny_profile_validates_all_five_datasets(tiny_ctx):
    summary = validate.run(tiny_ctx)
    assert summary["datasets"] == FIVE
    assert summary["checks"] > 100 and summary["checks_passed"] == summary["checks"]
    assert summary["rows"]["scifact"]["corpus.jsonl"] == 5183  # the full source was validated

    out = tiny_ctx.stage_dir("validate")
    assert read_manifest(out)["metrics"]["checks_passed"] == summary["checks"]
    report = json.loads((out / "validation.json").read_text())
    assert report["success"] and [d["dataset"] for d in report["datasets"]] == FIVE
    assert (out / "data_docs" / "index.html").is_file()
    assert (out / "data_docs" / "expectations" / "nfcorpus" / "qrels_train_tsv.html").is_file()
    for name in FIVE:
        ds = tiny_ctx.dataset(name)  # downstream stages read the snapshot through the context
        docs = ds.corpus()
        assert 0 < len(docs) < summary["rows"][name]["corpus.jsonl"]  # tiny profile: sliced
        for split in ds.splits():
            judged = {d for q in ds.qrels(split).values() for d in q}
            assert judged <= set(docs)
        stats = json.loads((out / "stats" / f"{name}.json").read_text())
        assert stats["rows"]["corpus.jsonl"] == summary["rows"][name]["corpus.jsonl"]
    assert sorted(p.name for p in tiny_ctx.artifacts.iterdir()) == ["validate"]  # no temp dirs left


# --- bad input through `uniret validate` --------------------------------------------------


@pytest.fixture(scope="module")
def clean_root(tmp_path_factory, shared_data) -> Path:
    """data/sf_slice: a small slice of real SciFact (both splits)."""
    root = tmp_path_factory.mktemp("clean") / "data"
    write_slice(BeirDataset(shared_data / "scifact", "scifact"), root / NAME, SliceConfig(max_queries=6, max_docs=50, seed=7))
    return root


def _params(path: Path, datasets: list[str], **validate_overrides) -> Path:
    validate_cfg = {
        "min_text_chars": 1,
        "max_doc_chars": 100000,
        "max_query_chars": 2000,
        "min_score": 1,
        "max_score": 4,
        "fail_on_drift": True,
        "drift": {"max_row_count_change": 0.2, "max_mean_length_change": 0.25, "max_length_ks": 0.2},
    } | validate_overrides
    raw = {
        "profile": "cpu",
        "data": {"train_dataset": datasets[0], "train_split": "train", "eval_datasets": datasets, "eval_split": "test"},
        "validate": validate_cfg,
    }
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def _uniret_validate(params: Path, data: Path, artifacts: Path) -> int:
    return cli.main(["validate", "--params", str(params), "--data", str(data), "--artifacts", str(artifacts)])


def _edit_lines(path: Path, edit: Callable[[list[bytes]], list[bytes]]) -> None:
    path.write_bytes(b"".join(edit(path.read_bytes().splitlines(keepends=True))))


def _json_edit(index: int, change: Callable[[dict], dict]) -> Callable[[list[bytes]], list[bytes]]:
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[index] = (json.dumps(change(json.loads(lines[index]))) + "\n").encode()
        return lines

    return edit


def _first_doc(root: Path) -> str:
    return json.loads((root / "corpus.jsonl").read_text().splitlines()[0])["_id"]


def _first_query(root: Path) -> str:
    return (root / "qrels" / "test.tsv").read_text().splitlines()[1].split("\t")[0]


def _append(rel: str, line: Callable[[Path], str]) -> Callable[[Path], list[str]]:
    def corrupt(ds: Path) -> list[str]:
        text = line(ds)
        with (ds / rel).open("a", encoding="utf-8") as fh:
            fh.write(text)
        return [text.split("\t")[0] if "\t" in text else ""]

    return corrupt


def _dup_doc(ds: Path) -> list[str]:
    first = (ds / "corpus.jsonl").read_text().splitlines()[0]
    with (ds / "corpus.jsonl").open("a") as fh:
        fh.write(first + "\n")
    return ["corpus.jsonl", "document ids are unique", f"_id={_first_doc(ds)}"]


def _dangling_query(ds: Path) -> list[str]:
    with (ds / "qrels" / "test.tsv").open("a") as fh:
        fh.write(f"ghost-query-77\t{_first_doc(ds)}\t1\n")
    return ["qrels/test.tsv", "every qrels query-id is in queries.jsonl", "query-id=ghost-query-77"]


def _dangling_doc(ds: Path) -> list[str]:
    with (ds / "qrels" / "train.tsv").open("a") as fh:
        fh.write(f"{_first_query(ds)}\tghost-doc-42\t1\n")
    return ["qrels/train.tsv", "every qrels corpus-id is in corpus.jsonl", "corpus-id=ghost-doc-42"]


def _empty_text(ds: Path) -> list[str]:
    _edit_lines(ds / "corpus.jsonl", _json_edit(3, lambda d: d | {"text": "   "}))
    return ["corpus.jsonl", "document text is not empty", "line 4 "]


def _broken_json(ds: Path) -> list[str]:
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[2] = lines[2][: len(lines[2]) // 2] + b"\n"
        return lines

    _edit_lines(ds / "corpus.jsonl", edit)
    return ["corpus.jsonl:3", "invalid JSON"]


def _non_utf8(ds: Path) -> list[str]:
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[1] = lines[1].replace(b'"text": "', b'"text": "\xff\xfe', 1)
        return lines

    _edit_lines(ds / "queries.jsonl", edit)
    return ["queries.jsonl:2", "not valid UTF-8"]


def _missing_field(ds: Path) -> list[str]:
    _edit_lines(ds / "queries.jsonl", _json_edit(0, lambda q: {"_id": q["_id"]}))
    return ["queries.jsonl:1 [text]", "missing field"]


def _wrong_type(ds: Path) -> list[str]:
    _edit_lines(ds / "corpus.jsonl", _json_edit(5, lambda d: d | {"text": 12345}))
    return ["corpus.jsonl:6 [text]", "expected a string, got int"]


def _score_out_of_domain(ds: Path) -> list[str]:
    def edit(lines: list[bytes]) -> list[bytes]:
        qid, did, _ = lines[1].decode().rstrip("\n").split("\t")
        lines[1] = f"{qid}\t{did}\t7\n".encode()
        return lines

    _edit_lines(ds / "qrels" / "test.tsv", edit)
    return ["qrels/test.tsv", "score is in [1, 4]", "line 2 "]


CORRUPTIONS = {
    "duplicate_doc_id": _dup_doc,
    "dangling_qrels_query": _dangling_query,
    "dangling_qrels_doc": _dangling_doc,
    "empty_text": _empty_text,
    "broken_json_line": _broken_json,
    "non_utf8_bytes": _non_utf8,
    "missing_field": _missing_field,
    "wrong_type": _wrong_type,
    "score_out_of_domain": _score_out_of_domain,
}


@pytest.fixture(scope="module")
def good_artifacts(clean_root, tmp_path_factory) -> Path:
    """artifacts/ holding a good validate output of the clean slice."""
    tmp = tmp_path_factory.mktemp("good")
    artifacts = tmp / "artifacts"
    assert _uniret_validate(_params(tmp / "params.yaml", [NAME]), clean_root, artifacts) == 0
    return artifacts


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_bad_input_fails_and_writes_nothing(case, clean_root, good_artifacts, tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(clean_root / NAME, data / NAME)
    expected = CORRUPTIONS[case](data / NAME)
    params = _params(tmp_path / "params.yaml", [NAME])

    # no previous output: nothing may appear
    fresh = tmp_path / "fresh"
    capsys.readouterr()
    assert _uniret_validate(params, data, fresh) == 1
    err = capsys.readouterr().err
    assert err.startswith("uniret validate: error:") and "validation failed: " in err
    for fragment in expected:
        assert fragment in err, f"{fragment!r} not in:\n{err}"
    assert str(data / NAME) in err  # the message names the file by its path
    assert not (fresh / "validate").exists()
    assert not fresh.exists() or list(fresh.iterdir()) == []

    # a previous good output stays exactly as it was
    previous = tmp_path / "artifacts"
    shutil.copytree(good_artifacts, previous)
    before = hash_path(previous)
    assert _uniret_validate(params, data, previous) == 1
    assert hash_path(previous) == before
    assert sorted(p.name for p in previous.iterdir()) == ["validate"]


def test_failures_across_datasets_are_all_listed(clean_root, tmp_path, capsys):
    data = tmp_path / "data"
    for name in ("first", "second"):
        shutil.copytree(clean_root / NAME, data / name)
    _dup_doc(data / "first")
    _broken_json(data / "second")
    _dangling_doc(data / "second")
    _score_out_of_domain(data / "second")
    params = _params(tmp_path / "params.yaml", ["first", "second"])
    capsys.readouterr()
    assert _uniret_validate(params, data, tmp_path / "artifacts") == 1
    err = capsys.readouterr().err
    assert "3 problem(s) in 2 of 2 dataset(s)" in err
    assert f"first: {data / 'first' / 'corpus.jsonl'}: expectation failed: document ids are unique" in err
    assert f"second: {data / 'second' / 'corpus.jsonl'}:3: invalid JSON" in err
    # the corpus of `second` is unreadable, so qrels doc ids cannot be checked against it
    assert "ghost-doc-42" not in err
    assert f"second: {data / 'second' / 'qrels' / 'test.tsv'}: expectation failed: score is in [1, 4]" in err


def test_drift_against_previous_snapshot(clean_root, tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(clean_root / NAME, data / NAME)
    artifacts = tmp_path / "artifacts"
    params = _params(tmp_path / "params.yaml", [NAME])
    assert _uniret_validate(params, data, artifacts) == 0
    first = json.loads((artifacts / "validate" / "stats" / f"{NAME}.json").read_text())

    # shrink strongly but stay valid: keep only the judged documents
    ds = BeirDataset(data / NAME)
    judged = {d for split in ds.splits() for q in ds.qrels(split).values() for d in q}
    _edit_lines(ds.corpus_path, lambda lines: [ln for ln in lines if json.loads(ln)["_id"] in judged])
    assert len(judged) < 0.7 * first["rows"]["corpus.jsonl"]

    before = hash_path(artifacts)
    capsys.readouterr()
    assert _uniret_validate(params, data, artifacts) == 1
    err = capsys.readouterr().err
    assert f"{NAME}: corpus.jsonl: drift check row_count_change" in err and "DRIFT" in err
    assert "validate.fail_on_drift: false" in err
    assert hash_path(artifacts) == before  # the baseline stays

    # an intended change is accepted once with fail_on_drift false; it becomes the new baseline
    assert _uniret_validate(_params(tmp_path / "accept.yaml", [NAME], fail_on_drift=False), data, artifacts) == 0
    report = json.loads((artifacts / "validate" / "validation.json").read_text())
    flagged = [d for d in report["datasets"][0]["drift"] if not d["ok"]]
    assert {(d["file"], d["metric"]) for d in flagged} >= {("corpus.jsonl", "row_count_change")}
    assert _uniret_validate(params, data, artifacts) == 0  # no drift against the new baseline
