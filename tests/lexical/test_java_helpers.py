"""uniret's Java helpers compile once per machine with the javac on PATH, and are simply off
without one (the images), or when turned off."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from uniret.lexical.jar import anserini_jar
from uniret.lexical.java_helpers import CACHE_ENV, DISABLE_ENV, helper_classpath


@pytest.fixture
def own_tmp(monkeypatch, tmp_path):
    cache = tmp_path / "cache"  # not there yet: made on first compile
    monkeypatch.setenv(CACHE_ENV, str(cache))
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    return cache


@pytest.mark.skipif(shutil.which("javac") is None, reason="no javac on PATH")
def test_compiled_once_into_a_folder_keyed_by_source(own_tmp):
    first = helper_classpath(anserini_jar())
    assert first is not None and first.parent == own_tmp
    cls = first / "uniret" / "TopDocsArrays.class"
    assert cls.is_file()
    assert stat.S_IMODE(first.stat().st_mode) == 0o755  # readable by an image's non-root user
    stamp = cls.stat().st_mtime_ns
    assert helper_classpath(anserini_jar()) == first and cls.stat().st_mtime_ns == stamp  # not recompiled
    assert [p.name for p in own_tmp.iterdir()] == [first.name]  # no temp folder left behind


def test_off_without_javac_or_when_disabled(own_tmp, monkeypatch):
    monkeypatch.setenv("PATH", str(own_tmp / "empty"))
    assert helper_classpath(anserini_jar()) is None
    assert not own_tmp.exists()
    monkeypatch.setenv(DISABLE_ENV, "1")
    assert helper_classpath(anserini_jar()) is None


@pytest.mark.skipif(shutil.which("javac") is None, reason="no javac on PATH")
def test_a_folder_of_another_user_is_not_used(own_tmp):
    first = helper_classpath(anserini_jar())
    if os.getuid() != 0:
        pytest.skip("needs root to give the folder to another user")
    os.chown(first, 12345, 12345)  # as if another user had put classes there first
    assert helper_classpath(anserini_jar()) is None
