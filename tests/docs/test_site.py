"""The documentation site builds with `mkdocs build --strict`: a broken link, anchor or nav entry,
or a page left out of the nav, fails the build and so this test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _build(config: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "-d", str(out)], capture_output=True, text=True, timeout=300, env=env)


def test_the_site_builds_strictly(tmp_path):
    done = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "architecture" / "index.html").is_file()
    assert (tmp_path / "site" / "experiments" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path):
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "results.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the log](experiments.md#no-such-entry).\n",
                    encoding="utf-8")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and "no-such-entry" in done.stdout + done.stderr
