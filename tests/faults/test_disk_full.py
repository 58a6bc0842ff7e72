"""Disk full while a stage writes its output (issue 12): the stage fails with one clear line, the
previous output is byte-identical and no temp folder is left. Two ways to fill the disk: a file
size limit (RLIMIT_FSIZE: works anywhere, also unprivileged CI) and, where the test may mount one,
a small tmpfs (a real ENOSPC)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

# runs `uniret validate` with writes beyond LIMIT bytes per file failing (EFBIG, SIGXFSZ ignored)
FSIZE = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv = ["uniret", *sys.argv[2:]]
runpy.run_module("uniret", run_name="__main__")
"""


def _validate_args(params, data, artifacts):
    return ["validate", "--params", str(params), "--profile", "tiny", "--data", str(data), "--artifacts", str(artifacts)]


@pytest.fixture
def previous(tmp_path, small_data, params_file, cli):
    """A good artifacts/validate from a first run."""
    params = params_file()
    art = tmp_path / "artifacts"
    r = cli(*_validate_args(params, small_data, art))
    assert r.returncode == 0, r.stderr
    return params, art


def _assert_refused_cleanly(r, art, before, snapshot) -> None:
    assert r.returncode == 1, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and ("File too large" in r.stderr or "No space left" in r.stderr), r.stderr[-3000:]
    assert snapshot(art) == before  # previous output byte-identical, no temp folder left


def test_file_size_limit_while_writing_keeps_the_previous_output(previous, small_data, snapshot):
    params, art = previous
    before = snapshot(art)
    limit = 16 << 10  # the corpus snapshot of a slice is larger than this
    r = subprocess.run([sys.executable, "-c", FSIZE, str(limit), *_validate_args(params, small_data, art)],
                       capture_output=True, text=True, timeout=600)
    _assert_refused_cleanly(r, art, before, snapshot)


def test_enospc_on_a_small_tmpfs_keeps_the_previous_output(previous, small_data, tmp_path, cli, snapshot):
    params, art = previous
    size = sum(p.stat().st_size for p in art.rglob("*") if p.is_file())
    mount = tmp_path / "small-disk"
    mount.mkdir()
    # room for the previous output and a third of a second copy: the new one runs out of space
    opts = f"size={size + size // 3 + (64 << 10)}"
    if subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN); the RLIMIT_FSIZE case covers it")
    try:
        small_art = mount / "artifacts"
        shutil.copytree(art, small_art)
        before = snapshot(small_art)
        r = cli(*_validate_args(params, small_data, small_art))
        _assert_refused_cleanly(r, small_art, before, snapshot)
    finally:
        subprocess.run(["umount", str(mount)], check=False)
