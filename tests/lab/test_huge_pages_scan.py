"""lab/huge_pages_scan.py: every array is timed each round; the view it scans is faiss's own memory."""

from __future__ import annotations

import numpy as np

from uniret.retrieval.dense import storage_view
from uniret.retrieval.faiss_loader import faiss


def test_the_storage_view_reads_faiss_memory_and_the_scan_times_every_array(lab_script):
    script = lab_script("huge_pages_scan")
    vectors = np.random.default_rng(0).standard_normal((500, 384)).astype(np.float32)
    index = faiss.IndexFlatIP(384)
    index.add(vectors)
    view = storage_view(index)
    np.testing.assert_array_equal(view, vectors)
    p50 = script.scan_p50({"a": vectors, "b": vectors.copy()}, vectors[:1], rounds=3)
    assert set(p50) == {"a", "b"} and all(v > 0 for v in p50.values())
