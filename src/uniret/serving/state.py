"""The live searcher set and its hot swap.

`ServingState` holds ONE reference to the live bundle (`LiveBundle`: version + {mode: Searcher}).
A reload builds the new searcher set aside, validates it (every mode answers a probe query) and
only then swaps the reference under a lock. Requests take a lease on the bundle they start with,
so an in-flight request finishes on the old searchers even when a reload lands meanwhile; the
old bundle's Java searchers are closed when its last lease ends. A bundle that fails to load or
to answer the probe is discarded and the old one keeps serving.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from uniret.config.retrieval import MODES
from uniret.lexical.jvm import JVM_LOCK
from uniret.retrieval.base import QueryBatch, Searcher

log = logging.getLogger("uniret.serving")

# Builds {mode: Searcher} from a bundle folder; raises when the folder is not a usable bundle.
Loader = Callable[[Path], dict[str, Searcher]]
PROBE_QID = "probe"
# pyjnius is not safe for concurrent calls from several Python threads: under 16 clients with a
# reload in flight we saw `IncompatibleClassChangeError` on Lucene result maps. Every Java call
# holds this process-wide lock: the searchers that call Lucene take it around those calls alone
# (retrieval/bm25.py, retrieval/lexical.py), so the numpy/faiss work of a fusion, query encoding and
# other requests run beside a Lucene search; closing a searcher takes it too.
RETRIEVAL_LOCK = JVM_LOCK


def search_one(searcher: Searcher, qid: str, query: str, k: int):
    """`searcher.search({qid: query}, k)`, the query encoded first when the mode needs its encoder."""
    batch = QueryBatch.from_dict({qid: query})
    if searcher.encoder is not None:
        batch.encoded = searcher.encoder.encode(batch.texts, is_query=True)
    return searcher.search_batch(batch, k)


class NotReady(RuntimeError):
    """No bundle has been loaded yet."""


class BundleLoadError(RuntimeError):
    """A bundle could not be loaded or failed its probe; the message says which and why."""


@dataclass(eq=False)
class LiveBundle:
    """One loaded bundle: what a request reads from start to end."""

    version: str
    path: Path
    searchers: dict[str, Searcher]
    default_mode: str
    loaded_at: str
    inflight: int = 0  # open leases; guarded by ServingState's lock
    retired: bool = False
    closed: bool = False

    @property
    def modes(self) -> list[str]:
        return list(self.searchers)


def close_searchers(searchers: dict[str, Searcher]) -> None:
    """Close every Java-backed part of a searcher set and its query batcher (shared parts: closed once)."""
    seen: set[int] = set()
    stack: list[object] = list(searchers.values())
    while stack:
        obj = stack.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        stack.extend(getattr(obj, "searchers", []) or [])
        stack.extend(getattr(obj, name, None) for name in ("index", "lexical", "encoder"))  # encoder: its batcher
        close = getattr(obj, "close", None)
        if callable(close):
            try:
                with RETRIEVAL_LOCK:
                    close()
            except Exception as exc:  # noqa: BLE001 - a failed close must not break serving
                log.warning("closing %s failed: %s", type(obj).__name__, exc)


def _libc_trim():
    """glibc's malloc_trim, or None elsewhere (musl, macOS)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _libc_trim()


def release_memory() -> None:
    """Give the memory of a closed bundle back to the OS.

    A retired bundle's arrays, ONNX sessions and Lucene readers are freed, but glibc keeps the
    freed pages in the malloc arenas of the threads that allocated them (loads run on the admin
    thread, searches on the pool): without a trim, RSS climbed by about a bundle per reload for
    hundreds of reloads before levelling off. gc first, so cycles holding the old searchers go too.
    """
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def retire(bundle: LiveBundle) -> None:
    """Close a bundle nobody uses any more and drop its searchers (the LiveBundle object itself may
    outlive it, e.g. as `previous` in a reload answer), then release the memory."""
    close_searchers(bundle.searchers)
    bundle.searchers = {}
    release_memory()


def probe_searchers(searchers: dict[str, Searcher], query: str, k: int) -> None:
    """Run `query` through every mode; BundleLoadError names the first mode that fails.

    Besides validating the bundle, this opens the searchers' lazily created Java objects before
    the bundle goes live, so concurrent first requests never race to create them.
    """
    if not searchers:
        raise BundleLoadError("the bundle offers no retrieval mode")
    for mode, searcher in searchers.items():
        try:
            run = search_one(searcher, PROBE_QID, query, k)
        except Exception as exc:  # noqa: BLE001 - any failure disqualifies the bundle
            raise BundleLoadError(f"probe query failed in mode {mode!r}: {type(exc).__name__}: {exc}") from exc
        hits = run.get(PROBE_QID)
        if hits is None or not all(isinstance(d, str) for d in hits):
            raise BundleLoadError(f"probe query in mode {mode!r} returned no ranking for the query")


FALLBACK_MODE = "uni"  # bundles that record no serve_mode (UnifieR models)


def bundle_serve_mode(path: Path) -> str:
    """The mode the bundle's recipe serves (index stage manifest: model.serve_mode), else uni."""
    from uniret.retrieval.bundle import read_bundle_manifest

    try:
        return (read_bundle_manifest(path).get("model") or {}).get("serve_mode") or FALLBACK_MODE
    except (OSError, ValueError):  # the loader reports an unreadable bundle itself
        return FALLBACK_MODE


def pick_default_mode(modes: list[str], preferred: str) -> str:
    """`preferred` when offered, else the first offered mode in MODES order."""
    if preferred in modes:
        return preferred
    ordered = sorted(modes, key=lambda m: MODES.index(m) if m in MODES else len(MODES))
    log.warning("default mode %r not offered by this bundle; using %r", preferred, ordered[0])
    return ordered[0]


class ServingState:
    """Holder of the live bundle; thread-safe reload and lease."""

    def __init__(self, loader: Loader, probe_query: str, default_mode: str | None, probe_k: int = 10):
        self._loader = loader
        self._probe_query = probe_query
        self._default_mode = default_mode
        self._probe_k = probe_k
        self._live: LiveBundle | None = None
        self._lock = threading.Lock()  # guards the reference and the lease counters (held briefly)
        self._reload_lock = threading.Lock()  # one reload at a time (loading takes seconds)

    @property
    def current(self) -> LiveBundle | None:
        """The live bundle (None before the first successful load)."""
        return self._live

    @contextmanager
    def lease(self) -> Iterator[LiveBundle]:
        """The live bundle, kept open until the block ends (NotReady before the first load)."""
        with self._lock:
            live = self._live
            if live is None:
                raise NotReady("no bundle loaded yet")
            live.inflight += 1
        try:
            yield live
        finally:
            with self._lock:
                live.inflight -= 1
                close_now = live.retired and live.inflight == 0 and not live.closed
                live.closed = live.closed or close_now
            if close_now:
                retire(live)

    def reload(self, path: Path, version: str) -> tuple[LiveBundle, LiveBundle | None]:
        """Load `path` aside, probe it, swap it in; returns (new, previous). Raises BundleLoadError."""
        with self._reload_lock:
            started = time.perf_counter()
            try:
                searchers = self._loader(Path(path))
            except Exception as exc:  # noqa: BLE001 - whatever broke, the old bundle stays live
                raise BundleLoadError(f"{path}: cannot load bundle: {type(exc).__name__}: {exc}") from exc
            try:
                probe_searchers(searchers, self._probe_query, self._probe_k)
            except BundleLoadError as exc:
                close_searchers(searchers)
                raise BundleLoadError(f"{path}: {exc}") from exc
            new = LiveBundle(
                version=version,
                path=Path(path),
                searchers=searchers,
                default_mode=pick_default_mode(list(searchers), self._default_mode or bundle_serve_mode(Path(path))),
                loaded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            )
            with self._lock:
                old, self._live = self._live, new
                close_old = old is not None and old.inflight == 0
                if old is not None:
                    old.retired = True
                    old.closed = close_old
            if close_old:
                retire(old)
            log.info("bundle %s live (%s) after a %.0f ms load, modes %s", version, path,
                     (time.perf_counter() - started) * 1000.0, ", ".join(new.modes))
            return new, old

    def close(self) -> None:
        """Retire the live bundle (server shutdown); its searchers close once idle."""
        with self._lock:
            live, self._live = self._live, None
            if live is None:
                return
            live.retired = True
            close_now = live.inflight == 0 and not live.closed
            live.closed = live.closed or close_now
        if close_now:
            close_searchers(live.searchers)
