"""The encoding cache's per-model arrays (the static tower's token vectors): stored once, read back
exactly, keyed by model and name, and a damaged entry is recomputed, never fatal."""

from __future__ import annotations

import numpy as np

from uniret.retrieval.corpus_cache import cached_model_array


def _counting(value: float):
    calls = []

    def compute() -> np.ndarray:
        calls.append(1)
        return np.full((4, 3), value, dtype=np.float32)

    return compute, calls


def test_a_second_call_reads_the_stored_array_and_other_keys_compute_their_own(tmp_path):
    compute, calls = _counting(0.25)
    first = cached_model_array(tmp_path, "model-a", "token vectors", compute)
    again = cached_model_array(tmp_path, "model-a", "token vectors", compute)
    assert len(calls) == 1 and again.dtype == np.float32 and np.array_equal(first, again)

    other_model, other_calls = _counting(0.5)
    assert cached_model_array(tmp_path, "model-b", "token vectors", other_model)[0, 0] == 0.5
    assert cached_model_array(tmp_path, "model-a", "other array", other_model)[0, 0] == 0.5
    assert len(other_calls) == 2
    assert not [p for p in (tmp_path / "model-arrays").iterdir() if p.name.startswith(".")]  # no temp file left


def test_a_damaged_entry_is_recomputed_and_replaced(tmp_path):
    compute, calls = _counting(1.0)
    cached_model_array(tmp_path, "model-a", "token vectors", compute)
    (entry,) = (tmp_path / "model-arrays").iterdir()
    entry.write_bytes(b"not an npy file")
    assert cached_model_array(tmp_path, "model-a", "token vectors", compute)[0, 0] == 1.0
    assert len(calls) == 2 and np.load(entry)[0, 0] == 1.0


def test_text_vectors_encode_only_the_texts_the_cache_lacks(tmp_path):
    from uniret.retrieval.corpus_cache import cached_text_vectors

    asked: list[list[str]] = []

    def compute(texts: list[str]) -> np.ndarray:
        asked.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float32)

    first = cached_text_vectors(tmp_path, "model-1", "teacher", ["aa", "b", "aa"], compute)
    assert first.tolist() == [[2, 2], [1, 0], [2, 2]] and asked == [["aa", "b"]]
    second = cached_text_vectors(tmp_path, "model-1", "teacher", ["b", "ccc", "aa"], compute)
    assert second.tolist() == [[1, 0], [3, 0], [2, 2]] and asked[-1] == ["ccc"]  # the new text alone
    cached_text_vectors(tmp_path, "model-2", "teacher", ["b"], compute)
    assert asked[-1] == ["b"]  # another model: nothing shared
    next((tmp_path / "model-arrays").glob("*.npz")).write_bytes(b"damaged")
    assert cached_text_vectors(tmp_path, "model-1", "teacher", ["b"], compute).tolist() == [[1, 0]]
