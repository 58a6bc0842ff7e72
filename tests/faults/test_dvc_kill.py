"""A `dvc repro` killed while a stage runs leaves that stage's previous output byte-identical (issue 57).

dvc deletes a stage's outs before running it unless they are `persist: true`; every out in dvc.yaml
is, and each stage writes a temp folder that it renames over the old output. The slow test runs the
real dvc (a temp git + dvc repo, the tiny profile), kills the process group of a second `dvc repro
bm25` as soon as the stage's temp folder appears, and compares the output tree before and after.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

STAGE = "bm25"  # the cheapest stage with a real output after validate (a Lucene index of SciFact)
START_TIMEOUT_S = 600  # dvc's start, its hashing of the deps and the stage's imports on a loaded machine


def _env() -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("UNIRET_ARTIFACTS", None)
    return env


def _dvc(repo: Path, *args: str) -> str:
    proc = subprocess.run([str(Path(sys.executable).parent / "dvc"), *args], cwd=repo, env=_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"dvc {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def tree_digest(root: Path) -> str:
    """sha256 over every entry under `root`: relative path, kind, mode bits and content (a link's target)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        h.update(f"{path.relative_to(root)}\0{st.st_mode:o}\0".encode())
        if path.is_symlink():
            h.update(os.readlink(path).encode())
        elif path.is_file():
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (a zombie no longer writes: it does not count)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended while we looked
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _set_param(repo: Path, section: str, key: str, value) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params[section][key] = value
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def test_every_dvc_out_is_persisted_so_dvc_never_deletes_the_previous_output(repo_root):
    """dvc removes a non-persist out before the stage runs: a kill then loses the last good output."""
    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    plain = {name: out for name, stage in stages.items() for out in stage.get("outs", [])
             if not (isinstance(out, dict) and all(opts.get("persist") is True for opts in out.values()))}
    assert not plain, f"outs without `persist: true` (dvc deletes them before the stage runs): {plain}"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="finds the killed processes through /proc")
def test_kill_minus_9_of_dvc_repro_leaves_the_previous_output_byte_identical(tmp_path, dvc_project):
    repo = dvc_project(tmp_path / "repo", lambda raw: raw["data"].update(eval_datasets=["scifact"]))
    _dvc(repo, "repro", "validate", STAGE)
    out = repo / "artifacts" / STAGE
    before = tree_digest(out)

    _set_param(repo, "bm25", "k1", 1.2)  # a changed input: dvc must rerun the stage
    proc = subprocess.Popen([str(Path(sys.executable).parent / "dvc"), "repro", STAGE], cwd=repo, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        # the stage's temp folder is its first write: from then on the stage runs and dvc did what it
        # does to the outs before a run (the deletion this test guards against)
        while not list(out.parent.glob(f".{STAGE}.tmp-*")):
            assert proc.poll() is None, f"dvc repro {STAGE} ended ({proc.returncode}) before the stage started"
            assert time.monotonic() < deadline, f"the stage's temp folder did not appear in {START_TIMEOUT_S}s"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while _group_alive(proc.pid):  # SIGKILL is delivered asynchronously: wait until none can write
        assert time.monotonic() < deadline, "processes of the killed dvc repro still run after 60 s"
        time.sleep(0.02)

    assert out.is_dir(), f"artifacts/{STAGE} is gone after the kill"
    assert tree_digest(out) == before, f"artifacts/{STAGE} changed under a killed run"
    assert STAGE in _dvc(repo, "status", STAGE)  # the param change still awaits a run

    # the next run replaces the output whole: a file that is not the stage's own does not survive
    (out / "stray.txt").write_text("left by nobody\n")
    ran = _dvc(repo, "repro", STAGE)
    assert f"Running stage '{STAGE}'" in ran
    assert not (out / "stray.txt").exists()
    assert tree_digest(out) != before
    manifest = yaml.safe_load((out / "manifest.json").read_text())
    assert manifest["params"]["bm25"]["k1"] == 1.2
    assert not list(out.parent.glob(f".{STAGE}.*")), "temp folders of the killed run were left behind"
    assert "Data and pipelines are up to date" in _dvc(repo, "status", STAGE)
