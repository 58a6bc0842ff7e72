"""Drift statistics: KS distance, length sketches and the comparison against a baseline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from uniret.config.sections import DriftConfig
from uniret.data.drift import compare_stats, dataset_stats, ks_distance, length_sketch, load_stats, save_stats
from uniret.data.tables import CORPUS, QUERIES, DatasetTables, FileTable


def test_ks_distance_known_values():
    assert ks_distance([1, 2, 3], [1, 2, 3]) == 0.0
    assert ks_distance([1, 2], [10, 20]) == 1.0  # disjoint supports
    # CDFs of {1,2,3,4} and {3,4,5,6} differ by at most 1/2 (at x=2)
    assert ks_distance([1, 2, 3, 4], [3, 4, 5, 6]) == pytest.approx(0.5)


def test_sketch_ks_close_to_full_sample_ks():
    rng = np.random.default_rng(0)
    a = rng.lognormal(6.0, 0.5, 5000)
    b = rng.lognormal(6.2, 0.5, 5000)
    points = 200
    full = ks_distance(a, b)
    sketched = ks_distance(length_sketch(a, points)["quantiles"], length_sketch(b, points)["quantiles"])
    assert abs(full - sketched) <= 2.0 / points + 0.01


def _tables(doc_lengths: list[int], n_queries: int) -> DatasetTables:
    corpus = pd.DataFrame({"text_chars": doc_lengths, "_id": [str(i) for i in range(len(doc_lengths))]})
    queries = pd.DataFrame({"text_chars": [40] * n_queries, "_id": [f"q{i}" for i in range(n_queries)]})
    return DatasetTables(
        name="toy",
        root=None,  # type: ignore[arg-type]
        files=[
            FileTable(CORPUS, None, "corpus.jsonl", corpus),  # type: ignore[arg-type]
            FileTable(QUERIES, None, "queries.jsonl", queries),  # type: ignore[arg-type]
        ],
    )


def test_compare_flags_shrink_and_length_shift(tmp_path):
    cfg = DriftConfig()
    base = dataset_stats(_tables(list(range(100, 1100, 10)), 50), cfg)
    same = dataset_stats(_tables(list(range(100, 1100, 10)), 50), cfg)
    assert all(c.ok for c in compare_stats(base, same, cfg))

    shrunk = dataset_stats(_tables(list(range(100, 1100, 10))[:30], 50), cfg)
    flagged = {(c.file, c.metric) for c in compare_stats(base, shrunk, cfg) if not c.ok}
    assert ("corpus.jsonl", "row_count_change") in flagged
    assert ("corpus.jsonl", "length_ks") in flagged  # only the short docs are left
    assert ("queries.jsonl", "row_count_change") not in flagged

    save_stats(tmp_path, base)
    assert load_stats(tmp_path, "toy") == base
    assert load_stats(tmp_path, "other") is None
