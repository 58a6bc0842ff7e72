"""Huge pages under a faiss flat index's vectors: the kernel collapses the range, the values stay."""

from __future__ import annotations

import mmap
import sys
from pathlib import Path

import numpy as np
import pytest

from uniret.retrieval.dense import doc_vectors
from uniret.retrieval.faiss_loader import faiss
from uniret.utils.pages import HUGE_PAGE, advise_huge_pages, huge_page_range

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _huge_kb(address: int) -> int:
    """AnonHugePages (kB) of the mapping of this process that holds `address`."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            low, high = (int(x, 16) for x in head.split("-"))
            inside = low <= address < high
        elif inside and head == "AnonHugePages:":
            return int(line.split()[1])
    return 0


def test_the_range_covers_only_whole_huge_pages_inside_the_buffer():
    array = np.zeros(3 * HUGE_PAGE // 4, dtype=np.float32)
    start, length = huge_page_range(array)
    assert start % HUGE_PAGE == 0 and length % HUGE_PAGE == 0 and length >= HUGE_PAGE
    assert array.ctypes.data <= start and start + length <= array.ctypes.data + array.nbytes
    assert huge_page_range(np.zeros(1000, dtype=np.float32)) == (0, 0)
    assert advise_huge_pages(np.zeros(1000, dtype=np.float32)) is False  # nothing to advise


@pytest.fixture(scope="module")
def kernel_collapses() -> None:
    """Skip unless this kernel collapses a plain anonymous mapping (4 KB pages, never advised) on request."""
    if not sys.platform.startswith("linux") or not THP.is_file() or "[never]" in THP.read_text():
        pytest.skip("no transparent huge pages here")
    region = mmap.mmap(-1, 4 * HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # as malloc maps
    probe = np.frombuffer(region, dtype=np.uint8)
    probe[:] = 1  # touched: 4 KB pages now
    if not advise_huge_pages(probe) or _huge_kb(huge_page_range(probe)[0]) == 0:
        pytest.skip("this kernel collapses nothing on request (MADV_COLLAPSE needs Linux 6.1+ and free 2 MB pages)")
    del probe


def test_a_flat_indexs_vectors_are_collapsed_into_huge_pages_with_their_values(kernel_collapses):
    vectors = np.random.default_rng(0).standard_normal((12_000, 384)).astype(np.float32)  # 18 MB
    index = faiss.IndexFlatIP(384)
    index.add(vectors)
    view = doc_vectors(index)  # a view of faiss's own memory (4 KB pages), advised on the way out
    np.testing.assert_array_equal(view, vectors)
    assert _huge_kb(huge_page_range(view)[0]) >= 2048
