"""Dense retrieval with faiss (inner product): Flat (exact), HNSW or IVF-PQ, on GPU when present."""

from __future__ import annotations

import ctypes
import logging
import math
from pathlib import Path

import numpy as np

from uniret.config.retrieval import DenseIndexConfig
from uniret.core.errors import InputFileError, reading
from uniret.core.runs import Run
from uniret.retrieval import kernels
from uniret.retrieval.base import QueryBatch, Searcher, rows_to_run, top_k_rows
from uniret.retrieval.encoding import TextEncoder
from uniret.retrieval.faiss_loader import faiss
from uniret.utils.pages import advise_huge_pages

log = logging.getLogger("uniret.retrieval")

# faiss warns below ~39 training points per IVF list; we size nlist to stay above it.
MIN_POINTS_PER_LIST = 39


def _ivfpq(vectors: np.ndarray, cfg: DenseIndexConfig) -> faiss.Index:
    n, dim = vectors.shape
    if dim % cfg.pq_m:
        raise ValueError(f"retrieval.dense.pq_m={cfg.pq_m} must divide the vector dimension {dim}")
    nlist = max(1, min(cfg.ivf_nlist, n // MIN_POINTS_PER_LIST))
    # PQ codebooks need at least 2**nbits training points per sub-quantizer.
    nbits = max(1, min(cfg.pq_nbits, int(math.log2(max(n, 2)))))
    if (nlist, nbits) != (cfg.ivf_nlist, cfg.pq_nbits):
        log.warning("IVF-PQ on %d vectors: nlist %d -> %d, nbits %d -> %d", n, cfg.ivf_nlist, nlist, cfg.pq_nbits, nbits)
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFPQ(quantizer, dim, nlist, cfg.pq_m, nbits, faiss.METRIC_INNER_PRODUCT)
    index.train(vectors)
    index.nprobe = min(cfg.ivf_nprobe, nlist)
    return index


def build_faiss_index(vectors: np.ndarray, cfg: DenseIndexConfig) -> faiss.Index:
    """A CPU faiss index over `vectors` (float32 [n, dim]) of the configured type."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    dim = vectors.shape[1]
    if cfg.type == "flat":
        index = faiss.IndexFlatIP(dim)
    elif cfg.type == "hnsw":
        index = faiss.IndexHNSWFlat(dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = cfg.hnsw_ef_construction
        index.hnsw.efSearch = cfg.hnsw_ef_search
    elif cfg.type == "ivfpq":
        index = _ivfpq(vectors, cfg)
    else:  # the config's Literal type makes this unreachable from params.yaml
        raise ValueError(f"unknown dense index type {cfg.type!r}")
    index.add(vectors)
    return index


def to_search_device(index: faiss.Index, cfg: DenseIndexConfig) -> faiss.Index:
    """Move `index` onto all GPUs when faiss-gpu sees one and params allow; else return it unchanged.

    HNSW has no GPU implementation in faiss, so it stays on the CPU.
    """
    if not cfg.use_gpu or cfg.type == "hnsw" or faiss.get_num_gpus() == 0:
        return index
    log.info("faiss: moving the %s index onto %d GPU(s)", cfg.type, faiss.get_num_gpus())
    return faiss.index_cpu_to_all_gpus(index)


def save_faiss_index(index: faiss.Index, path: str | Path) -> Path:
    """Write a CPU index to `path` (indexes are built on the CPU and moved to GPUs only to search)."""
    faiss.write_index(index, str(path))
    return Path(path)


def load_faiss_index(path: str | Path, mapped: bool = False) -> faiss.Index:
    """Read an index written by `save_faiss_index`; InputFileError naming the file when it is damaged.
    `mapped`: a flat index's vectors stay in the file, mapped read-only (no private copy), for a
    reader whose searches read the bundle's aligned copy (`mapped_vectors`) instead."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: faiss index not found")
    with reading(path, "faiss index"):
        return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if mapped else 0)


def save_vectors(vectors: np.ndarray, path: str | Path) -> Path:
    """Write a flat index's vectors as a .npy file (float32 [n, dim]), which `mapped_vectors` maps."""
    np.save(path, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    return Path(path)


# rows of a mapped vector file compared with its faiss index at load (the first, the last and these many between)
CHECKED_ROWS = 64


def mapped_vectors(path: str | Path, index: faiss.Index) -> np.ndarray:
    """The vectors of `path` (written by `save_vectors`) mapped read-only: every process serving the
    bundle reads the same pages of the page cache, so two workers scanning every vector stream one
    copy through the CPU's cache, not two (E102). InputFileError naming the file when its shape or
    a sampled row disagrees with the flat `index` it copies."""
    with reading(path, "vector file (.npy, float32)"):
        vectors = np.load(path, mmap_mode="r", allow_pickle=False)
    if vectors.dtype != np.float32 or vectors.shape != (index.ntotal, index.d):
        raise InputFileError(f"{path}: {vectors.dtype} {list(vectors.shape)} where the faiss index holds float32 "
                             f"[{index.ntotal}, {index.d}]")
    if index.ntotal:
        rows = np.unique(np.r_[0, index.ntotal - 1,
                               np.random.default_rng(0).integers(0, index.ntotal, CHECKED_ROWS)])
        if not np.array_equal(vectors[rows], storage_view(index)[rows]):
            raise InputFileError(f"{path}: rows differ from the faiss index beside it (written by another build?)")
    return vectors


def storage_view(index: faiss.Index) -> np.ndarray:
    """A [ntotal, d] array over a flat index's own memory, as faiss allocated it (nothing writes it:
    searches read it); its buffer keeps the index alive (every numpy view of it, reshaped or sliced,
    holds that buffer)."""
    n = index.ntotal * index.d
    address = faiss.rev_swig_ptr(index.get_xb(), n).__array_interface__["data"][0]
    buffer = (ctypes.c_float * n).from_address(address)
    buffer.owner = index  # the memory belongs to the index
    return np.frombuffer(buffer, dtype=np.float32).reshape(index.ntotal, index.d)


def doc_vectors(index: faiss.Index) -> np.ndarray:
    """All stored vectors [ntotal, dim] (exact for Flat/HNSW, PQ-reconstructed for IVF-PQ). Over a
    flat index: a view of its own storage, no second copy (valid while the index lives), on huge pages
    where the kernel allows."""
    if type(index) in (faiss.IndexFlatIP, faiss.IndexFlatL2, faiss.IndexFlat) and index.ntotal:
        view = storage_view(index)
        advise_huge_pages(view)  # on faiss's 4 KB pages a scan of every vector is 1.17-1.68x slower (E61)
        return view
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.make_direct_map()
    return index.reconstruct_n(0, index.ntotal)


# dimensions per PQ sub-quantizer of the shortlist's fast-scan codes (4 bits each): 384 dims -> 48 bytes
SHORTLIST_DIMS_PER_CODE = 4
# below this many vectors a full scan costs tens of microseconds and 4-bit codebooks (16 centroids
# per sub-quantizer) lack the ~39 training points per centroid faiss asks for
SHORTLIST_MIN_DOCS = 1000


def build_fast_scan(vectors: np.ndarray) -> faiss.Index | None:
    """A 4-bit PQ fast-scan index over `vectors` (inner product; the shortlist of an exact search),
    or None when the dimension does not split into SHORTLIST_DIMS_PER_CODE-dim sub-vectors or the
    corpus is under SHORTLIST_MIN_DOCS (then every vector is scanned)."""
    dim = vectors.shape[1]
    if dim % SHORTLIST_DIMS_PER_CODE or len(vectors) < SHORTLIST_MIN_DOCS:
        return None
    index = faiss.IndexPQFastScan(dim, dim // SHORTLIST_DIMS_PER_CODE, 4, faiss.METRIC_INNER_PRODUCT)
    index.train(vectors)  # k-means on a fixed-seed sample of at most 256 points per centroid
    index.add(vectors)
    return index


def shortlisted(fast_scan: faiss.Index, vectors: np.ndarray, queries: np.ndarray, k: int,
                candidates: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, rows) [n, k] of the k best by exact inner product among each query's `candidates`
    best by the fast-scan codes; ties by the lower row, as `top_k_rows`. Each query's rescoring is one
    numba call (retrieval/kernels.py) where numba is installed."""
    _, cand = fast_scan.search(queries, candidates)
    scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    rows = np.full((len(queries), k), -1, dtype=np.int64)
    for i, query in enumerate(queries):
        if kernels.AVAILABLE:
            best, found = kernels.rescore_top_k(vectors, query, cand[i], k)
        else:
            listed = np.sort(cand[i][cand[i] >= 0])
            exact = vectors[listed] @ query
            order = np.argsort(-exact, kind="stable")[:k]  # rows ascending: ties by the lower row
            best, found = exact[order], listed[order]
        rows[i, :len(found)], scores[i, :len(found)] = found, best
    return scores, rows


def build_ivf_shortlist(vectors: np.ndarray, points_per_list: int, nprobe: int, train_points: int,
                       seed: int) -> faiss.Index:
    """An IVF index of 4-bit PQ fast-scan codes over `vectors` (inner product): n / `points_per_list`
    lists from k-means on a fixed-seed sample of `train_points` vectors per list, each vector coded in
    SHORTLIST_DIMS_PER_CODE-dim pieces (one per dimension where the dimension does not split). A search
    scans the codes of the `nprobe` lists nearest the query: the shortlist whose candidates the large
    corpus's dense route scores exactly from the flat vectors (`shortlisted`; retrieval.pruning, E53)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n, dim = vectors.shape
    nlist = max(1, min(n // points_per_list, n // MIN_POINTS_PER_LIST))
    codes = dim // SHORTLIST_DIMS_PER_CODE if dim % SHORTLIST_DIMS_PER_CODE == 0 else dim
    index = faiss.IndexIVFPQFastScan(faiss.IndexFlatIP(dim), dim, nlist, codes, 4, faiss.METRIC_INNER_PRODUCT)
    sample = np.random.default_rng(seed).choice(n, size=min(n, nlist * train_points), replace=False)
    index.train(vectors[np.sort(sample)])
    index.add(vectors)
    index.nprobe = min(nprobe, nlist)
    return index


class DenseSearcher(Searcher):
    """Top-k by inner product between the query's dense vector and the faiss index.

    Over a CPU flat index whose vectors are given, the exact search is one numpy product and a
    partial sort instead: the same ranking (ties by the lower row), twice as fast as faiss's batch-1
    scan (E38); with `shortlist`, only the candidates a fast-scan copy names are scored exactly
    (hybrid_fast's dense route, E43). Other index types (HNSW, IVF-PQ, a GPU index) search through faiss.
    """

    mode = "dense"
    has_arrays = True

    def __init__(self, index: faiss.Index, docids: list[str], encoder: TextEncoder | None = None,
                 vectors: np.ndarray | None = None, shortlist: float = 0.0, fast_scan: faiss.Index | None = None):
        """`shortlist`: over a flat index with its vectors, take `shortlist` x k candidates from a 4-bit
        PQ fast-scan copy of the vectors (`fast_scan` where given, e.g. `build_ivf_shortlist`'s; else
        built here) and rank them by their exact scores (0: scan every vector)."""
        if index.ntotal != len(docids):
            raise ValueError(f"faiss index holds {index.ntotal} vectors but {len(docids)} doc ids were given")
        self.index = index
        self.docids = docids
        self.encoder = encoder
        exact = vectors is not None and isinstance(index, faiss.IndexFlat) and len(vectors) == index.ntotal
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32) if exact else None
        self.shortlist = shortlist
        self.gil_bound = isinstance(index, faiss.Index) and encoder is None  # in-process, no query encoder
        if not shortlist or self.vectors is None:
            fast_scan = None
        elif fast_scan is None:
            fast_scan = build_fast_scan(self.vectors)
        self.fast_scan = fast_scan

    def _search(self, batch: QueryBatch, k: int) -> tuple[np.ndarray, np.ndarray]:
        enc = batch.require_encoded(self.mode)
        if enc.dense is None:
            raise ValueError("dense retrieval needs a model with a dense head")
        queries = np.ascontiguousarray(enc.dense, dtype=np.float32)
        k = min(k, len(self.docids))
        candidates = math.ceil(k * self.shortlist)
        if self.fast_scan is not None and candidates < len(self.docids):
            return shortlisted(self.fast_scan, self.vectors, queries, k, max(candidates, k))
        if self.vectors is not None:
            products = queries @ self.vectors.T  # one product for the batch
            if kernels.AVAILABLE and len(queries):  # each query's top k in one compiled call (E104)
                hits = [kernels.top_k_scores(row, k) for row in products]
                return np.stack([s for _, s in hits]), np.stack([r for r, _ in hits])
            idx, scores = top_k_rows(products, k)
            return scores, idx
        return self.index.search(queries, k)

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        scores, idx = self._search(batch, k)
        return rows_to_run(batch.ids, self.docids, idx, scores)

    def search_arrays(self, batch: QueryBatch, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        scores, idx = self._search(batch, k)
        # negative indices are faiss' "no result" (rows_to_run skips them too)
        return [(row[row >= 0].astype(np.int64), sc[row >= 0].astype(np.float64)) for row, sc in zip(idx, scores, strict=True)]
