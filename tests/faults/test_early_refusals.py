"""issue 57 (minor): what `uniret params check` refuses every command refuses, and a dataset named by a
path is refused before the slow checks start (it took about 20 s: great-expectations' import)."""

from __future__ import annotations

import pytest
import yaml

from uniret.cli import main


@pytest.fixture
def bad_k_params(tmp_path, repo_root):
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["retrieval"]["k"] = "5"  # a string where an integer belongs, in a section BM25-only evaluate never reads
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_value_params_check_refuses_is_refused_by_evaluate_too(bad_k_params, small_data, tmp_path, capsys):
    assert main(["params", "check", "--params", str(bad_k_params)]) == 1
    check = capsys.readouterr().err
    assert main(["evaluate", "--params", str(bad_k_params), "--data", str(small_data), "--datasets", "scifact",
                 "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "retrieval" in err and "k" in err and "retrieval" in check, (err, check)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["../scifact", "/etc", "scifact/..", "nosuch"])
def test_a_dataset_named_by_a_path_or_missing_is_refused_at_once(name, repo_root, small_data, tmp_path, capsys,
                                                                  monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "great_expectations", raising=False)
    assert main(["evaluate", "--params", str(repo_root / "params.yaml"), "--data", str(small_data), "--datasets",
                 name, "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "--datasets" in err and repr(name) in err, err
    assert "great_expectations" not in sys.modules  # refused before the slow checks were imported
    assert not (tmp_path / "out").exists()
