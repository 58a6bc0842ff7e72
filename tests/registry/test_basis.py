"""The evaluation basis: what data stored scores were measured on, and when two bases differ."""

from __future__ import annotations

import copy
import json

from uniret.config import Params, load_params
from uniret.registry.basis import basis_differences, evaluation_basis


def _params(repo_root, **data) -> Params:
    base = load_params(repo_root / "params.yaml", "cpu")
    raw = copy.deepcopy(base.raw)
    raw["data"].update(data)
    return Params(raw=raw, profile="cpu", path=base.path)


def _validate(tmp_path, inputs: dict) -> object:
    folder = tmp_path / "validate"
    folder.mkdir(exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps({"stage": "validate", "inputs": inputs}))
    return folder


def test_basis_holds_each_eval_datasets_file_hash_and_the_scoring_rules(repo_root, tmp_path):
    params = _params(repo_root, eval_datasets=["scifact", "npl"])
    basis = evaluation_basis(params, _validate(tmp_path, {"scifact": "h1", "npl": "h2", "cranfield": "h3"}))
    assert basis == {"split": "test", "slice": {"max_queries": None, "max_docs": None, "seed": 13},
                     "ignore_identical_ids": True, "datasets": {"scifact": "h1", "npl": "h2"}}
    assert evaluation_basis(params, None)["datasets"] == {"scifact": None, "npl": None}


def test_same_basis_has_no_differences_and_each_change_is_named(repo_root, tmp_path):
    params = _params(repo_root, eval_datasets=["scifact", "npl"])
    stored = evaluation_basis(params, _validate(tmp_path, {"scifact": "h1", "npl": "h2"}))
    assert basis_differences(stored, copy.deepcopy(stored)) == []

    changed = evaluation_basis(params, _validate(tmp_path, {"scifact": "h1", "npl": "h2-new"}))
    assert basis_differences(stored, changed) == ["npl: its files changed since production was evaluated"]

    sliced = evaluation_basis(_params(repo_root, eval_datasets=["scifact", "npl"], slice={"max_queries": 24}),
                              _validate(tmp_path, {"scifact": "h1", "npl": "h2"}))
    [line] = basis_differences(stored, sliced)
    assert line.startswith("slice: {'max_queries': None") and "{'max_queries': 24" in line

    wider = evaluation_basis(_params(repo_root, eval_datasets=["scifact", "npl", "medline"]),
                             _validate(tmp_path, {"scifact": "h1", "npl": "h2", "medline": "h4"}))
    assert basis_differences(stored, wider) == ["medline: not among the datasets production was evaluated on"]


def test_an_unknown_basis_is_never_taken_as_the_same(repo_root, tmp_path):
    params = _params(repo_root, eval_datasets=["scifact"])
    current = evaluation_basis(params, _validate(tmp_path, {"scifact": "h1"}))
    assert basis_differences(None, current) == [
        "production's manifest records no evaluation basis (promoted before uniret stored one)"]
    unhashed = evaluation_basis(params, None)
    assert basis_differences(unhashed, unhashed) == ["scifact: this run's validate stage recorded no hash of its files"]
