"""lab/server_args.py, shared by the lab's server loads (serve_threads, serve_profile, jvm_warmup_curve):
per-thread CPU read from /proc (a spinning thread's seconds land on its own key) and the --set edits of
the params tree."""

from __future__ import annotations

import os
import threading
import time

import pytest


def test_a_busy_thread_accrues_cpu_under_its_own_key(lab_script):
    threads = lab_script("server_args")
    stop, ident = threading.Event(), []

    def spin():
        ident.append(threading.get_native_id())
        while not stop.is_set():
            pass

    worker = threading.Thread(target=spin)
    worker.start()
    try:
        while not ident:
            time.sleep(0.01)
        before = threads.thread_cpu(os.getpid())
        time.sleep(0.3)
        after = threads.thread_cpu(os.getpid())
    finally:
        stop.set()
        worker.join()
    key = next(k for k in after if k[1] == ident[0])
    assert key[0] == os.getpid() and key[2]  # this process, a comm name
    assert after[key] - before.get(key, 0.0) > 0.05  # spinning for 0.3 s: most of it on the CPU
    assert (os.getpid(), os.getpid(), key[2]) in after  # the main thread is listed too


def test_settings_edit_the_params_tree(lab_script):
    threads = lab_script("server_args")
    params = {"serve": {"workers": 2}, "retrieval": {"pruning": {"dense_min_docs": 20000}}}
    threads.apply_setting(params, "workers=1")
    threads.apply_setting(params, "retrieval.pruning.dense_min_docs=null")
    assert params == {"serve": {"workers": 1}, "retrieval": {"pruning": {"dense_min_docs": None}}}
    with pytest.raises(ValueError, match="no section 'nowhere'"):
        threads.apply_setting(params, "nowhere.x=1")
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        threads.apply_setting(params, "workers")
