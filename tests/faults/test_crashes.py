"""Finding 5 of issue 12: a killed nightly leaves no orphan and keeps its lock until its children
are gone (the next run takes over the stale lock with a log line); killed stages leave temp
folders that the next run of the stage removes, and a run killed mid-rename loses no output."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from uniret.utils.locks import LockHeld, file_lock

WAIT_S = 120.0  # hang guards, not timing assertions


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


# The DAG command stands in for `dvc repro` -> `uniret <stage>`: a child that starts a grandchild in
# its own process group (as dvc does), records both pids, and sleeps.
FAMILY = """
import json, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(sys.argv[1], "w").write(json.dumps({"child": __import__("os").getpid(), "grandchild": grandchild.pid}))
time.sleep(600)
"""


def test_kill_9_of_nightly_leaves_no_orphan_and_the_next_run_takes_the_lock_over(tmp_path, repo_root,
                                                                                 shared_data, params_file, cli):
    params = params_file()
    script, pids_file, lock = tmp_path / "family.py", tmp_path / "pids.json", tmp_path / "nightly.lock"
    script.write_text(FAMILY)
    repro = f"{shlex.quote(sys.executable)} {script} {pids_file}"
    base = ["nightly", "--params", str(params), "--profile", "tiny", "--data", str(shared_data),
            "--artifacts", str(tmp_path / "artifacts"), "--lock-file", str(lock), "--no-report"]
    nightly = subprocess.Popen([sys.executable, "-m", "uniret", *base, "--repro", repro],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: pids_file.exists() and pids_file.read_text().endswith("}"), "the DAG command never started")
        pids = json.loads(pids_file.read_text())
        assert all(_alive(p) for p in pids.values())
        nightly.send_signal(signal.SIGKILL)
        nightly.wait()
        _wait(lambda: not any(_alive(p) for p in pids.values()), f"orphans left: {pids}")

        def lock_free() -> bool:
            try:
                with file_lock(lock, blocking=False):
                    pass
            except LockHeld:
                return False
            return True

        # the lock outlives nightly until its commands are gone (the watchdog holds it): then it frees
        _wait(lock_free, "the lock was never released after the children were killed")
    finally:
        for pid in (json.loads(pids_file.read_text()).values() if pids_file.exists() else []):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    # a stale pid in the lock file (a dead holder) is taken over with a log line
    lock.write_text(f"{nightly.pid}\n")
    r = cli(*base, "--repro", f"{shlex.quote(sys.executable)} -c pass")
    assert f"taking over the lock left by pid {nightly.pid} (no longer running)" in r.stderr, r.stderr


# dvc -> `uniret <stage>` again, but the stage is a uniret process: it watches $UNIRET_NIGHTLY_PID as
# every uniret command does (uniret.cli.main -> uniret.utils.parent_watch.watch_nightly)
UNIRET_FAMILY = """
import json, os, subprocess, sys, time
stage = "from uniret.utils.parent_watch import watch_nightly; import time; watch_nightly(); time.sleep(600)"
grandchild = subprocess.Popen([sys.executable, "-c", stage])
open(sys.argv[1], "w").write(json.dumps({"child": os.getpid(), "grandchild": grandchild.pid}))
time.sleep(600)
"""


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


def test_kill_9_of_nightly_and_its_watchdog_together_leaves_no_child(tmp_path, repo_root, shared_data, params_file):
    """Issue 43: with the watchdog killed too, the kernel kills the DAG command (die_with_parent) and the
    uniret stage under it exits by itself (watch_nightly): nothing trains on, re-parented to pid 1."""
    params = params_file()
    script, pids_file, lock = tmp_path / "family.py", tmp_path / "pids.json", tmp_path / "nightly.lock"
    script.write_text(UNIRET_FAMILY)
    nightly = subprocess.Popen([sys.executable, "-m", "uniret", "nightly", "--params", str(params), "--profile", "tiny",
                                "--data", str(shared_data), "--artifacts", str(tmp_path / "artifacts"), "--lock-file",
                                str(lock), "--no-report", "--repro", f"{shlex.quote(sys.executable)} {script} {pids_file}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = {}
    try:
        _wait(lambda: pids_file.exists() and pids_file.read_text().endswith("}"), "the DAG command never started")
        pids = json.loads(pids_file.read_text())
        watchdogs = [p for p in _children(nightly.pid) if p not in pids.values()]
        assert len(watchdogs) == 1 and "uniret.ops.watchdog" in Path(f"/proc/{watchdogs[0]}/cmdline").read_text()
        os.kill(watchdogs[0], signal.SIGKILL)
        nightly.send_signal(signal.SIGKILL)
        nightly.wait()
        _wait(lambda: not any(_alive(p) for p in pids.values()), f"left running: {pids}")
    finally:
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_nightly_with_other_artifacts_than_dvc_writes_is_refused(tmp_path, shared_data, params_file, cli):
    params = params_file()
    r = cli("nightly", "--params", str(params), "--profile", "tiny", "--data", str(shared_data),
            "--artifacts", str(tmp_path / "elsewhere"), "--no-report")
    assert r.returncode == 1 and "cannot be used with `dvc repro`" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "elsewhere").exists()


def test_a_stage_removes_temp_folders_of_killed_runs(tmp_path, small_data, params_file, cli):
    art = tmp_path / "artifacts"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = [art / f".validate.tmp-{dead.stdout.strip()}-abc", art / ".validate.tmp-legacy", art / ".bm25.tmp-1-x"]
    for path in stale:
        (path / "datasets").mkdir(parents=True)
    live = art / f".validate.tmp-{os.getpid()}-running"  # a concurrent run (alive pid): kept
    live.mkdir()
    r = cli("validate", "--params", str(params_file()), "--profile", "tiny", "--data", str(small_data),
            "--artifacts", str(art))
    assert r.returncode == 0, r.stderr
    assert not stale[0].exists() and not stale[1].exists() and "stale temp folder" in r.stderr
    assert stale[2].exists() and live.exists()  # another stage's folders are that stage's business
    assert sorted(p.name for p in art.iterdir() if p.name.startswith(".validate")) == [live.name]


def test_a_run_killed_between_its_two_renames_gets_the_previous_output_back(tmp_path):
    from uniret.runtime import clean_stale

    art = tmp_path / "artifacts"
    old = art / ".index.old-999999999"  # pid beyond pid_max: certainly dead
    old.mkdir(parents=True)
    (old / "manifest.json").write_text("{}")
    clean_stale(art, "index")
    assert (art / "index" / "manifest.json").read_text() == "{}" and not old.exists()


@pytest.mark.parametrize("pid_text", ["", "not-a-pid"])
def test_a_lock_file_without_a_pid_is_taken_quietly(tmp_path, pid_text, caplog):
    lock = tmp_path / "l"
    lock.write_text(pid_text)
    with file_lock(lock, blocking=False) as held:
        assert held.path == lock and lock.read_text().strip() == str(os.getpid())
    assert "taking over" not in caplog.text
