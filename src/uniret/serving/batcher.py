"""Dynamic micro-batching of query encoding across concurrent requests.

Each request thread calls `encode([query], is_query=True)` and blocks; one batching thread takes
the first waiting query, gathers more for at most `max_wait_ms` (or until `max_batch` are in
hand), encodes them as ONE batch and hands every caller its own row. Under load the encoder runs
fewer, larger calls (better GEMM use, less per-call overhead); alone, a query waits at most
`max_wait_ms`. Document encoding and multi-query calls pass through unbatched.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

from uniret.retrieval.encoding import EncodedTexts, TextEncoder, split_encoded

log = logging.getLogger("uniret.serving")

T = TypeVar("T")
R = TypeVar("R")
_STOP = object()
MS = 1e-3


class BatcherClosed(RuntimeError):
    """The batcher was closed; no more work is accepted."""


class MicroBatcher(Generic[T, R]):
    """Runs `fn(items) -> results` (same length, same order) on batches of concurrently submitted items.

    A batch closes when it holds `max_batch` items or `max_wait_s` after its first item arrived;
    `submit` blocks until its own result is ready (or `timeout_s` passes) and re-raises `fn`'s error.
    """

    def __init__(self, fn: Callable[[list[T]], Sequence[R]], max_batch: int, max_wait_s: float,
                 name: str = "uniret-batcher", workers: int = 1):
        if max_batch <= 0 or max_wait_s < 0 or workers <= 0:
            raise ValueError(f"max_batch and workers must be positive and max_wait_s >= 0, got {max_batch}, "
                             f"{workers}, {max_wait_s}")
        self.fn = fn
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self._queue: queue.Queue = queue.Queue()
        self._closed = False
        self.batch_sizes: list[int] = []  # every batch run, in order of completion (for tests and metrics)
        # several workers overlap one batch's Python work (tokenising, splitting) with another's encoding
        self._threads = [threading.Thread(target=self._loop, name=f"{name}-{i}", daemon=True) for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, item: T, timeout_s: float | None = None) -> R:
        """Queue `item`, wait for its result."""
        if self._closed:
            raise BatcherClosed("micro-batcher is closed")
        future: Future = Future()
        self._queue.put((item, future))
        return future.result(timeout_s)

    def _gather(self, first) -> list:
        batch = [first]
        deadline = time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch:
            remaining = deadline - time.monotonic()
            try:
                nxt = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if nxt is _STOP:
                self._queue.put(_STOP)  # finish this batch, stop on the next turn
                break
            batch.append(nxt)
        return batch

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                self._queue.put(_STOP)
                return
            batch = self._gather(first)
            futures = [f for _, f in batch]
            try:
                results = self.fn([item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"batched function returned {len(results)} results for {len(batch)} items")
            except Exception as exc:  # noqa: BLE001 - every waiting caller gets the error
                for f in futures:
                    f.set_exception(exc)
                continue
            self.batch_sizes.append(len(batch))
            for f, r in zip(futures, results, strict=True):
                f.set_result(r)

    def close(self) -> None:
        """Finish queued work, then stop the batching threads."""
        self._closed = True
        self._queue.put(_STOP)  # each worker puts it back for the next one as it stops
        for t in self._threads:
            t.join()


class BatchingQueryEncoder:
    """A TextEncoder whose single-query encodings are micro-batched across threads."""

    def __init__(self, encoder: TextEncoder, max_batch: int, max_wait_s: float, timeout_s: float | None = None,
                 workers: int = 1):
        self.encoder = encoder
        self.timeout_s = timeout_s
        self.batcher: MicroBatcher[str, EncodedTexts] = MicroBatcher(
            lambda texts: split_encoded(encoder.encode(texts, is_query=True)), max_batch, max_wait_s,
            name="uniret-query-batcher", workers=workers)

    def encode(self, texts: Sequence[str], is_query: bool) -> EncodedTexts:
        if not is_query or len(texts) != 1:
            return self.encoder.encode(texts, is_query)
        return self.batcher.submit(texts[0], self.timeout_s)

    def close(self) -> None:
        self.batcher.close()
