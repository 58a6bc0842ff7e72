"""The query micro-batcher: every caller gets its own result under concurrency, within its bounds."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp

from uniret.retrieval.encoding import EncodedTexts
from uniret.serving.batcher import BatcherClosed, BatchingQueryEncoder, MicroBatcher, split_encoded


class Recorder:
    """A batched function that answers each item with a value derived from it, and records its batches."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s
        self.batches: list[list[int]] = []

    def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        time.sleep(self.delay_s)  # a slow encoder: callers pile up behind it and get batched
        return [10 * i + 1 for i in items]


def test_each_caller_gets_its_own_result_and_batches_respect_max_batch():
    fn = Recorder(delay_s=0.005)
    batcher = MicroBatcher(fn, max_batch=4, max_wait_s=0.02)
    try:
        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(lambda i: (i, batcher.submit(i, timeout_s=30)), range(200)))
    finally:
        batcher.close()
    assert all(r == 10 * i + 1 for i, r in results)
    assert sorted(i for b in fn.batches for i in b) == list(range(200))  # each item encoded exactly once
    assert max(len(b) for b in fn.batches) <= 4
    assert max(len(b) for b in fn.batches) > 1  # concurrent callers were batched together
    assert batcher.batch_sizes == [len(b) for b in fn.batches]


def test_a_lone_caller_waits_at_most_max_wait():
    fn = Recorder()
    batcher = MicroBatcher(fn, max_batch=64, max_wait_s=0.05)
    try:
        start = time.perf_counter()
        assert batcher.submit(3, timeout_s=5) == 31
        waited = time.perf_counter() - start
    finally:
        batcher.close()
    assert fn.batches == [[3]]
    assert 0.04 <= waited < 2.0  # the bounded wait, then a batch of one (upper bound generous for loaded CI)


def test_an_error_reaches_every_caller_of_the_batch_and_the_batcher_keeps_going():
    calls = {"n": 0}

    def flaky(items):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("encoder exploded")
        return items

    batcher = MicroBatcher(flaky, max_batch=8, max_wait_s=0.05)
    barrier = threading.Barrier(3)

    def call(i):
        barrier.wait()
        try:
            return batcher.submit(i, timeout_s=10)
        except ValueError as exc:
            return str(exc)

    try:
        with ThreadPoolExecutor(3) as pool:
            first = list(pool.map(call, range(3)))
        assert batcher.submit(7, timeout_s=10) == 7
    finally:
        batcher.close()
    assert "encoder exploded" in first
    with pytest.raises(BatcherClosed):
        batcher.submit(1)


def test_a_short_result_list_is_an_error_not_a_mixup():
    batcher = MicroBatcher(lambda items: items[:-1], max_batch=2, max_wait_s=0.0)
    try:
        with pytest.raises(RuntimeError, match="returned 0 results for 1 items"):
            batcher.submit(1, timeout_s=10)
    finally:
        batcher.close()


def test_bounds_are_checked():
    with pytest.raises(ValueError):
        MicroBatcher(lambda x: x, max_batch=0, max_wait_s=0.01)


class RowEncoder:
    """A deterministic encoder: row i of every head is a function of the text alone."""

    def __init__(self):
        self.calls: list[int] = []

    def encode(self, texts, is_query):
        self.calls.append(len(texts))
        codes = np.array([[float(sum(map(ord, t)) % 97), float(len(t))] for t in texts], dtype=np.float32)
        sparse = sp.csr_matrix(np.hstack([codes, np.zeros((len(texts), 3), dtype=np.float32)]))
        return EncodedTexts(dense=codes, sparse=sparse, gate=codes[:, 0] / 100.0)


def test_batching_encoder_returns_each_query_its_own_rows():
    inner = RowEncoder()
    enc = BatchingQueryEncoder(inner, max_batch=8, max_wait_s=0.01, timeout_s=30)
    texts = [f"query number {i} " + "x" * (i % 7) for i in range(64)]
    try:
        with ThreadPoolExecutor(16) as pool:
            got = list(pool.map(lambda t: enc.encode([t], is_query=True), texts))
        batched = list(inner.calls)
        docs = enc.encode(["a doc", "another"], is_query=False)  # documents pass through unbatched
    finally:
        enc.close()
    for text, out in zip(texts, got, strict=True):
        want = inner.encode([text], True)
        assert len(out) == 1
        np.testing.assert_array_equal(out.dense, want.dense)
        np.testing.assert_array_equal(out.sparse.toarray(), want.sparse.toarray())
        np.testing.assert_array_equal(out.gate, want.gate)
    assert len(docs) == 2 and inner.calls[len(batched)] == 2
    assert sum(batched) == len(texts) and 1 < max(batched) <= 8


def test_split_encoded_keeps_missing_heads_missing():
    rows = split_encoded(EncodedTexts(dense=np.ones((3, 2), dtype=np.float32)))
    assert [len(r) for r in rows] == [1, 1, 1] and all(r.sparse is None and r.gate is None for r in rows)


def test_several_workers_share_the_queue_and_all_stop():
    fn = Recorder(delay_s=0.01)
    batcher = MicroBatcher(fn, max_batch=3, max_wait_s=0.01, workers=3)
    try:
        with ThreadPoolExecutor(12) as pool:
            results = list(pool.map(lambda i: batcher.submit(i, timeout_s=30), range(60)))
    finally:
        batcher.close()
    assert results == [10 * i + 1 for i in range(60)]
    assert max(len(b) for b in fn.batches) <= 3 and sorted(i for b in fn.batches for i in b) == list(range(60))
    assert not any(t.is_alive() for t in batcher._threads)
