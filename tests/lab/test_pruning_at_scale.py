"""lab/pruning_at_scale.py on a small corpus: the recorded queries, the exhaustive reference, Seismic's rows."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from uniret.config.retrieval import PruningConfig
from uniret.retrieval.postings import Postings
from uniret.retrieval.ranking import tie_ranks


def test_the_routes_figures_compare_seismic_and_the_cut_lists_with_every_posting(lab_script):
    script = lab_script("pruning_at_scale")
    rng = np.random.default_rng(3)
    weights = sp.random(3000, 200, density=0.05, format="csr", random_state=4, dtype=np.float32)
    weights.data = np.ceil(weights.data * 50)
    ties = tie_ranks([f"d{i}" for i in range(3000)])
    recorder = script._Recorder(Postings(weights))
    for _ in range(12):
        terms = rng.choice(200, size=8, replace=False)
        rows, _ = recorder.top_k(terms, np.ones(8), 50, ties)
        assert len(rows) == 50
    assert all(np.all(np.diff(c[0]) > 0) for c in recorder.calls)  # terms ascending, as the rescoring reads them
    pruning = PruningConfig(posting_share=0.2, sparse_candidates=300)
    row = script._route("lexical_static", weights, ties, recorder.calls, recorder.postings, pruning, [100, 10_000])
    assert row["exhaustive"]["top10_agreement"] == 1.0 and 0 < row["cut_lists"]["top10_agreement"] <= 1.0
    assert len(row["seismic"]) == 2 * len(script.SEARCHES)
    kept_all = [e for e in row["seismic"] if e["n_postings"] == 10_000 and e["query_cut"] == 99]
    # nothing cut from the lists, every query term read: Seismic's hits rescored find (nearly) the exhaustive top 10
    assert kept_all[0]["top10_agreement"] >= 0.95


def test_the_dense_figures_compare_the_pq_code_shortlist_and_ivf_flat_with_the_scan(lab_script):
    script = lab_script("pruning_at_scale")
    rng = np.random.default_rng(5)
    vectors = (rng.standard_normal((40, 32))[rng.integers(0, 40, 3000)]
               + 0.3 * rng.standard_normal((3000, 32))).astype(np.float32)
    queries = vectors[:15] + 0.1 * rng.standard_normal((15, 32)).astype(np.float32)
    out = script._dense(vectors, queries, 10, PruningConfig(ivf_points_per_list=100, ivf_train_points=40))
    assert out["scan"]["top10_agreement"] == 1.0 and out["ivf_flat"]["nlist"] == 30
    assert [p["candidates"] for p in out["ivf_pq_codes"]["probes"]] == [t * 10 for _, t in script.PROBES]
    # every list probed (64 >= 30): the flat lists are the scan; the codes' candidates rescored come close
    assert out["ivf_flat"]["nprobe"][64]["top10_agreement"] == 1.0
    assert out["ivf_pq_codes"]["probes"][-1]["top10_agreement"] >= 0.9
    assert out["ivf_pq_codes"]["bytes_per_doc"] < out["ivf_flat"]["bytes_per_doc"] / 4
