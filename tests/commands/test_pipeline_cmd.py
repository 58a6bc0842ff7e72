"""`uniret pipeline compile|image|run` argument plumbing (submit/schedule: tests/kubeflow/test_client.py)."""

from __future__ import annotations

import yaml

from uniret.cli import main
from uniret.config import load_params


def test_compile_a_prefix_to_a_chosen_file(repo_root, tmp_path, capsys):
    out = tmp_path / "prefix.yaml"
    assert main(["pipeline", "compile", "--params", str(repo_root / "params.yaml"), "--output", str(out),
                 "--stages", "validate,bm25"]) == 0
    spec = next(yaml.safe_load_all(out.read_text()))
    assert set(spec["root"]["dag"]["tasks"]) == {"validate", "bm25"}
    assert str(out) in capsys.readouterr().out


def test_image_prints_the_params_tags(repo_root, capsys):
    cfg = load_params(repo_root / "params.yaml").section("pipeline")
    assert main(["pipeline", "image", "--params", str(repo_root / "params.yaml")]) == 0
    assert main(["pipeline", "image", "--params", str(repo_root / "params.yaml"), "--variant", "cpu"]) == 0
    assert capsys.readouterr().out.split() == [cfg.image, cfg.serving_image]


def test_run_needs_local(repo_root, capsys):
    assert main(["pipeline", "run", "--params", str(repo_root / "params.yaml")]) == 1
    assert "add --local" in capsys.readouterr().err


def test_unknown_stage_is_a_clear_error(repo_root, tmp_path, capsys):
    assert main(["pipeline", "compile", "--params", str(repo_root / "params.yaml"), "--output",
                 str(tmp_path / "x.yaml"), "--stages", "validate,trian"]) == 1
    assert "unknown trian" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()
