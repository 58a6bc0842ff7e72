"""Atomic writes: content lands whole, files get normal permissions, failures leave no temp files."""

import stat

import pytest

from uniret.utils.files import atomic_dir, atomic_write_json, atomic_write_text, hash_path


def test_atomic_write_is_readable_by_others(tmp_path):
    path = atomic_write_text(tmp_path / "a" / "x.txt", "hello")
    assert path.read_text() == "hello"
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode & stat.S_IRGRP and mode & stat.S_IROTH  # not mkstemp's 0600


def test_atomic_dir_gets_the_mode_mkdir_would_give(tmp_path):
    (tmp_path / "plain").mkdir()
    with atomic_dir(tmp_path / "published") as tmp:
        (tmp / "f").write_text("1")
    mode = stat.S_IMODE((tmp_path / "published").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "plain").stat().st_mode)
    assert mode & stat.S_IROTH and mode & stat.S_IXOTH  # not mkdtemp's 0700 (umask 022 here)


def test_failed_write_leaves_old_content_and_no_temp(tmp_path, monkeypatch):
    path = atomic_write_text(tmp_path / "x.json", "old")

    def disk_full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("uniret.utils.files.os.replace", disk_full)  # fail at the rename
    with pytest.raises(OSError):
        atomic_write_json(path, {"new": 1})
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_hash_path_sees_content_and_names(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("1")
    h1 = hash_path(tmp_path / "d")
    (tmp_path / "d" / "f").write_text("2")
    assert hash_path(tmp_path / "d") != h1
