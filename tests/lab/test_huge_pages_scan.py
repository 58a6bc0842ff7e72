"""lab/huge_pages_scan.py: the unadvised view is faiss's own memory, and every array is timed each round."""

from __future__ import annotations

import numpy as np

from uniret.retrieval.faiss_loader import faiss


def test_the_raw_view_reads_faiss_storage_and_the_scan_times_every_array(lab_script):
    script = lab_script("huge_pages_scan")
    vectors = np.random.default_rng(0).standard_normal((500, 384)).astype(np.float32)
    index = faiss.IndexFlatIP(384)
    index.add(vectors)
    view = script.raw_view(index)
    np.testing.assert_array_equal(view, vectors)
    p50 = script.scan_p50({"a": vectors, "b": vectors.copy()}, vectors[:1], rounds=3)
    assert set(p50) == {"a", "b"} and all(v > 0 for v in p50.values())
