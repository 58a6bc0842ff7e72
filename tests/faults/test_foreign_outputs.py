"""Never delete what uniret did not write (issue 33): every command that takes an output path
refuses one holding something uniret did not write, in one line, exit 1, and the foreign files
survive byte for byte (uniret.utils.owned holds the rule)."""

from __future__ import annotations

import os

import pytest

from uniret.cli import main
from uniret.core.dag import STAGES

FOREIGN = {"notes.txt": b"a user's work\n", "sub/data.bin": b"\x00\x01\x02"}


def _foreign_folder(path):
    for rel, content in FOREIGN.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(content)
    return path


def _one_error_line(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith(f"uniret {command}: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _evaluate(cli, repo_root, data, out, cwd=None):
    return cli("evaluate", "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--data", str(data),
               "--datasets", "scifact", "--out", str(out), cwd=cwd)


@pytest.mark.parametrize("typo", ["folder", ".", "file"])
def test_evaluate_out_refuses_a_folder_or_file_it_did_not_write(typo, tmp_path, small_data, repo_root, cli, snapshot):
    work = _foreign_folder(tmp_path / "work")
    out = {"folder": work, ".": ".", "file": work / "notes.txt"}[typo]
    before = snapshot(tmp_path)
    r = _evaluate(cli, repo_root, small_data, out, cwd=work)
    assert r.returncode == 1, r.stdout + r.stderr
    line = _one_error_line(r.stderr, "evaluate")
    kind = "file" if typo == "file" else "folder"
    assert f"{work / 'notes.txt' if typo == 'file' else work}: refusing to replace this {kind}" in line, line
    assert "choose another output path" in line
    assert snapshot(tmp_path) == before  # nothing deleted, nothing moved aside, no temp folder left


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_refuses_an_output_folder_it_did_not_write(stage, tmp_path, repo_root, small_data, capsys,
                                                               snapshot):
    artifacts = tmp_path / "home"
    _foreign_folder(artifacts / stage)
    before = snapshot(tmp_path)
    command = ["bench", "--stage"] if stage == "bench" else [stage]
    rc = main([*command, "--params", str(repo_root / "params.yaml"), "--profile", "tiny", "--data", str(small_data),
               "--artifacts", str(artifacts)])
    assert rc == 1
    line = _one_error_line(capsys.readouterr().err, command[0])
    assert f"{artifacts / stage}: refusing to replace this folder: uniret did not write it" in line, line
    assert snapshot(tmp_path) == before


def test_export_opensearch_out_refuses_a_foreign_folder_before_reading_the_bundle(tmp_path, repo_root, capsys,
                                                                                  snapshot):
    out = _foreign_folder(tmp_path / "export")
    before = snapshot(tmp_path)
    rc = main(["export", "opensearch", "--params", str(repo_root / "params.yaml"), "--bundle", str(tmp_path / "none"),
               "--out", str(out)])
    assert rc == 1
    assert f"{out}: refusing to replace this folder" in _one_error_line(capsys.readouterr().err, "export")
    assert snapshot(tmp_path) == before


def test_file_outputs_replace_only_files_uniret_wrote(tmp_path, repo_root, capsys, snapshot):
    notes = tmp_path / "notes.md"
    notes.write_text("# not a pipeline\n")
    folder = _foreign_folder(tmp_path / "folder")
    before = snapshot(tmp_path)
    compile_ = ["pipeline", "compile", "--params", str(repo_root / "params.yaml"), "--stages", "validate"]
    significance = ["significance", "bm25", "uni", "--params", str(repo_root / "params.yaml"), "--evaluated",
                    str(tmp_path / "nothing")]
    for args, command in ((compile_, "pipeline"), (significance, "significance")):
        for target in (notes, folder):
            assert main([*args, "--output" if command == "pipeline" else "--out", str(target)]) == 1
            assert f"{target}: refusing to replace this" in _one_error_line(capsys.readouterr().err, command)
    assert snapshot(tmp_path) == before

    compiled = tmp_path / "retrain.yaml"
    for _ in range(2):  # its own compiled pipeline is replaced
        assert main([*compile_, "--output", str(compiled)]) == 0
    assert compiled.read_text().startswith("# PIPELINE DEFINITION")


def test_commands_writing_named_files_into_a_folder_refuse_a_file_there(tmp_path, repo_root, capsys, snapshot):
    taken = tmp_path / "taken"
    taken.write_text("mine")
    before = snapshot(tmp_path)
    assert main(["bench", "--params", str(repo_root / "params.yaml"), "--bundle", str(tmp_path / "b"),
                 "--out", str(taken)]) == 1
    assert f"{taken}: not a folder" in _one_error_line(capsys.readouterr().err, "bench")
    assert main(["data", "fetch", "scifact", "--dest", str(taken)]) == 1
    assert f"{taken}: not a folder" in _one_error_line(capsys.readouterr().err, "data")
    assert snapshot(tmp_path) == before


def test_the_traceback_behind_the_message_is_there_with_v(tmp_path, repo_root):
    from uniret.utils.owned import NotOwnedError

    out = _foreign_folder(tmp_path / "export")
    with pytest.raises(NotOwnedError):
        main(["-v", "export", "opensearch", "--params", str(repo_root / "params.yaml"), "--bundle", "x",
              "--out", str(out)])
    assert sorted(os.listdir(out)) == ["notes.txt", "sub"]


def test_a_file_named_like_a_temp_folder_is_not_removed_as_stale(tmp_path):
    from uniret.runtime import clean_stale

    (tmp_path / "evaluate").mkdir()
    kept = tmp_path / ".evaluate.old-99999999"  # a dead pid; what earlier versions left of a user's file at --out
    kept.write_bytes(b"a user's file")
    stale = tmp_path / ".evaluate.tmp-99999999-abc"
    stale.mkdir()
    assert clean_stale(tmp_path, "evaluate") == [stale]
    assert kept.read_bytes() == b"a user's file"
