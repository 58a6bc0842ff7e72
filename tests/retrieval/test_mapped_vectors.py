"""A bundle's flat vectors mapped from dense.npy (E102): every serving process reads the same page-cache
pages, the searches rank as over a private copy, and a file that disagrees with its faiss index is refused."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from uniret.core.errors import InputFileError
from uniret.retrieval.bundle import DENSE_FILE, DENSE_VECTORS_FILE, open_bundle
from uniret.retrieval.dense import doc_vectors, load_faiss_index, mapped_vectors, storage_view
from uniret.retrieval.modes import build_searchers

QUERIES = {"q1": "protein folding in cells", "q2": "vitamin D deficiency and bone density",
           "q3": "zebrafish heart regeneration"}
MODES = ["dense_static", "dense_feedback", "hybrid_fast"]


def _mapping_of(address: int) -> str:
    """The /proc/self/maps line whose range holds `address`."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            start, end = (int(part, 16) for part in line.split()[0].split("-"))
            if start <= address < end:
                return line.strip()
    raise AssertionError(f"address {address:#x} is in no mapping")


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads Linux's /proc")
def test_the_index_stage_writes_the_vectors_and_serving_maps_them_from_the_file(tiny_bundle):
    path = tiny_bundle / DENSE_VECTORS_FILE
    private = doc_vectors(load_faiss_index(tiny_bundle / DENSE_FILE))
    bundle = open_bundle(tiny_bundle)
    vectors = bundle.index.doc_vectors
    np.testing.assert_array_equal(vectors, private)
    assert not vectors.flags.writeable and vectors.flags.aligned
    mapping = _mapping_of(vectors.ctypes.data)
    # shared (s), read-only, backed by the bundle's file: another worker's mapping reads the same pages
    assert mapping.split()[1].startswith("r") and mapping.split()[1].endswith("s"), mapping
    assert mapping.endswith(str(path.resolve())), mapping
    # the faiss index keeps no private copy either: its storage is mapped from dense.faiss
    assert _mapping_of(storage_view(bundle.index.dense).ctypes.data).endswith(str((tiny_bundle / DENSE_FILE).resolve()))


def test_mapped_and_private_vectors_give_the_same_runs(tiny_bundle, tmp_path):
    old = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, old)
    (old / DENSE_VECTORS_FILE).unlink()  # a bundle written before E102: its vectors read into the process
    runs = {}
    for name, folder in (("mapped", tiny_bundle), ("private", old)):
        bundle = open_bundle(folder)
        assert isinstance(bundle.index.doc_vectors, np.memmap) == (name == "mapped")
        found = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, modes=MODES)
        runs[name] = {mode: found[mode].search(QUERIES, 50) for mode in MODES}
    for mode in MODES:
        for qid in QUERIES:
            assert runs["mapped"][mode][qid] == runs["private"][mode][qid], (mode, qid)


@pytest.mark.parametrize("damage", ["row", "shape", "truncated"])
def test_a_vector_file_that_disagrees_with_its_index_is_refused_naming_it(tiny_bundle, tmp_path, damage):
    index = load_faiss_index(tiny_bundle / DENSE_FILE, mapped=True)
    vectors = np.load(tiny_bundle / DENSE_VECTORS_FILE)
    path = tmp_path / DENSE_VECTORS_FILE
    if damage == "row":
        vectors[-1] += 1.0  # the last row is always among those compared
        np.save(path, vectors)
    elif damage == "shape":
        np.save(path, vectors[:-1])
    else:
        path.write_bytes((tiny_bundle / DENSE_VECTORS_FILE).read_bytes()[:-100])
    with pytest.raises(InputFileError, match=str(path)):
        mapped_vectors(path, index)
