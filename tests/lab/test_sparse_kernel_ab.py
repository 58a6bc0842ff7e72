"""lab/sparse_kernel_ab.py's replay on a small dump: each route's recorded calls timed whole, by
MaxScore and cut, every run appended under its label."""

from __future__ import annotations

import argparse
import json
import pickle

import numpy as np
import scipy.sparse as sp

from uniret.retrieval.postings import Postings
from uniret.retrieval.ranking import tie_ranks


def test_the_replay_times_both_routes_whole_and_cut_and_appends_each_run(lab_script, tmp_path, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)  # the cut as params.yaml sets it
    script = lab_script("sparse_kernel_ab")
    recorder = lab_script("pruning_at_scale")._Recorder
    rng = np.random.default_rng(2)
    ties = tie_ranks([f"d{i}" for i in range(3000)])
    calls = {}
    for name, file in script.ROUTES.items():
        weights = sp.random(3000, 200, density=0.05, format="csr", random_state=len(name), dtype=np.float32)
        sp.save_npz(tmp_path / file, weights)
        postings = recorder(Postings(weights))
        for _ in range(8):
            postings.top_k(rng.choice(200, size=6, replace=False), np.ones(6), 20, ties)
        calls[name] = postings.calls
    np.save(tmp_path / "ties.npy", ties)
    (tmp_path / "calls.pkl").write_bytes(pickle.dumps(calls))
    out = tmp_path / "ab.json"
    for label in ("before", "after"):
        script.time_routes(argparse.Namespace(dir=str(tmp_path), label=label, rounds=1, out=str(out)))
    runs = json.loads(out.read_text())["runs"]
    assert [r["label"] for r in runs] == ["before", "after"]
    for run in runs:
        for name in script.ROUTES:
            assert run[name]["docs"] == 3000
            for form in ("every posting", "every posting, MaxScore", "cut lists"):
                assert 0 < run[name][form]["p50_ms"] <= run[name][form]["p95_ms"]
            assert run[name]["every posting"]["same_ranking"] == 1.0
            assert run[name]["every posting, MaxScore"]["same_ranking"] == 1.0  # rank-safe
            assert 0.0 <= run[name]["cut lists"]["same_ranking"] <= 1.0
