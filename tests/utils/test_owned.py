"""The one rule for replacing a path (uniret.utils.owned): only what uniret wrote, or what is empty;
everything else is refused before anything is written, and survives byte for byte."""

from __future__ import annotations

import json

import pytest

from uniret.core.errors import is_user_error
from uniret.utils.files import atomic_dir, replace_dir
from uniret.utils.owned import (
    OWNER_STAMP,
    NotOwnedError,
    check_output_folder,
    check_replaceable,
    written_by_uniret,
)


def _foreign(tmp_path):
    folder = tmp_path / "work"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_bytes(b"precious\x00bytes")
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return folder


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_missing_and_empty_paths_are_free(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty.txt").write_bytes(b"")
    for name in ("missing", "empty", "empty.txt"):
        assert check_replaceable(tmp_path / name) == tmp_path / name


def test_a_stamped_or_self_naming_manifest_marks_a_folder_as_uniret_s(tmp_path):
    stamped, stage, version, other = (tmp_path / n for n in ("out", "evaluate", "v7", "mine"))
    for folder, manifest in ((stamped, OWNER_STAMP), (stage, {"stage": "evaluate"}), (version, {"version": "v7"}),
                             (other, {"stage": "evaluate", "author": "me"})):
        folder.mkdir()
        (folder / "manifest.json").write_text(json.dumps(manifest))
        (folder / "metrics.json").write_text("{}")
    assert written_by_uniret(stamped) and written_by_uniret(stage) and written_by_uniret(version)
    assert not written_by_uniret(other)  # a manifest naming another folder is not a mark
    with pytest.raises(NotOwnedError):
        check_replaceable(other)


@pytest.mark.parametrize("manifest", [None, b"{not json", b"[1, 2]", json.dumps({"written_by": "someone"}).encode()])
def test_a_folder_without_uniret_s_mark_is_refused_and_left_as_it_was(tmp_path, manifest):
    folder = _foreign(tmp_path)
    if manifest is not None:
        (folder / "manifest.json").write_bytes(manifest)
    before = _tree(folder)
    with pytest.raises(NotOwnedError, match=r"work: refusing to replace this folder: uniret did not write it") as err:
        check_replaceable(folder)
    assert "choose another output path" in str(err.value) and "\n" not in str(err.value)
    assert is_user_error(err.value)  # the CLI prints it as one line, exit 1
    tmp = tmp_path / ".work.tmp"
    tmp.mkdir()
    with pytest.raises(NotOwnedError):
        replace_dir(tmp, folder)
    with pytest.raises(NotOwnedError), atomic_dir(folder) as _:
        pytest.fail("atomic_dir must refuse before yielding")
    assert _tree(folder) == before


def test_files_uniret_wrote_carry_the_stamp_or_their_writer_s_header(tmp_path):
    stamped, compiled, foreign = tmp_path / "s.json", tmp_path / "p.yaml", tmp_path / "notes.md"
    stamped.write_text(json.dumps({**OWNER_STAMP, "a": 1}))
    compiled.write_text("# PIPELINE DEFINITION\n# Name: x\n")
    foreign.write_text("# my notes\n")
    assert check_replaceable(stamped) == stamped
    assert check_replaceable(compiled, header=b"# PIPELINE DEFINITION") == compiled
    with pytest.raises(NotOwnedError, match="refusing to replace this file"):
        check_replaceable(compiled)  # without its writer's header, it is just a file
    with pytest.raises(NotOwnedError, match="or pass --force to replace it"):
        check_replaceable(foreign, force_flag="--force")
    assert check_replaceable(foreign, force=True) == foreign
    assert foreign.read_text() == "# my notes\n"


def test_replace_dir_swaps_uniret_s_own_folder_and_an_empty_file(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "manifest.json").write_text(json.dumps(OWNER_STAMP))
    (final / "old.txt").write_text("old")
    with atomic_dir(final) as tmp:
        (tmp / "manifest.json").write_text(json.dumps(OWNER_STAMP))
        (tmp / "new.txt").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["manifest.json", "new.txt"]
    empty_file = tmp_path / "placeholder"
    empty_file.write_bytes(b"")
    tmp = tmp_path / ".tmp-x"
    tmp.mkdir()
    (tmp / "a").write_text("a")
    replace_dir(tmp, empty_file)
    assert (empty_file / "a").read_text() == "a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "placeholder"]  # nothing left aside


def test_links_are_never_taken_for_uniret_s_folders(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "manifest.json").write_text(json.dumps(OWNER_STAMP))
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    with pytest.raises(NotOwnedError):
        check_replaceable(link)


def test_a_folder_for_named_files_must_be_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    assert check_output_folder(tmp_path / "new") == tmp_path / "new"
    assert check_output_folder(tmp_path) == tmp_path
    with pytest.raises(NotOwnedError, match="file: not a folder"):
        check_output_folder(tmp_path / "file")
