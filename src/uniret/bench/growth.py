"""Cost as the corpus grows: latency per mode and index bytes per document at synthetic corpus sizes.

Encoding 500k texts is out of reach on 2 CPU cores, so larger corpora are synthesised from the
bundle's own document VECTORS: each synthetic document copies a random real document and perturbs it.
- dense: the copied vector plus Gaussian noise (`noise` x the per-dimension std of the corpus),
  rescaled to the copied vector's norm, so score scales and the neighbourhood structure stay real;
- sparse: the copied document's term list, a `swap_terms` fraction of its terms replaced by terms
  drawn by document frequency (posting lists grow like a real corpus's, not as exact copies), its
  integer impacts scaled by a log-normal factor (sigma `noise`) and kept >= 1.
Queries are real queries encoded once (query encoding does not depend on the corpus size; the
modes section times it). Latencies are batch 1, pre-encoded, on the same queries at every size.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from uniret.bench.stats import latency_summary
from uniret.config.retrieval import DenseIndexConfig
from uniret.config.serving import GrowthConfig
from uniret.retrieval.base import QueryBatch
from uniret.retrieval.dense import DenseSearcher, build_faiss_index
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.faiss_loader import faiss
from uniret.retrieval.fusion import FusionSearcher
from uniret.retrieval.lexical import LexicalSearcher, MemoryImpactIndex
from uniret.retrieval.uni import UniSearcher

log = logging.getLogger("uniret.bench")

TOP = 10
PLOT = "growth.png"


@contextmanager
def all_cores() -> Iterator[None]:
    """faiss builds on every core, searches keep the (serving) thread count set for the process."""
    searching = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(searching)


def synthesise(vectors: np.ndarray, impacts: sp.csr_matrix, n: int, cfg: GrowthConfig,
               rng: np.random.Generator) -> tuple[np.ndarray, sp.csr_matrix]:
    """`n` synthetic documents (dense float32 [n, d], integer impacts CSR [n, vocab]) from the real ones."""
    base = rng.integers(0, vectors.shape[0], size=n)
    dense = vectors[base] + rng.standard_normal((n, vectors.shape[1]), dtype=np.float32) * (
        cfg.noise * vectors.std(axis=0, keepdims=True))
    dense *= (np.linalg.norm(vectors[base], axis=1) / np.maximum(np.linalg.norm(dense, axis=1), 1e-12))[:, None]
    lengths = np.diff(impacts.indptr)[base]
    pos = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(
        impacts.indptr[base] - (np.cumsum(lengths) - lengths), lengths)
    terms = impacts.indices[pos].astype(np.int64)
    df = np.bincount(impacts.indices, minlength=impacts.shape[1]).astype(np.float64)
    swap = rng.random(len(terms)) < cfg.swap_terms
    terms[swap] = rng.choice(impacts.shape[1], size=int(swap.sum()), p=df / df.sum())
    weights = np.maximum(1.0, np.rint(impacts.data[pos] * rng.lognormal(0.0, cfg.noise, len(pos))))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    out = sp.csr_matrix((weights.astype(np.float32), terms, indptr), shape=(n, impacts.shape[1]))
    out.sum_duplicates()  # a swapped-in term may repeat one the document has
    return np.ascontiguousarray(dense, dtype=np.float32), out


def _time(search, batches: list[QueryBatch]) -> tuple[dict, list]:
    search(batches[0])  # warm-up
    latencies, results = [], []
    for b in batches:
        start = time.perf_counter()
        results.append(search(b))
        latencies.append(time.perf_counter() - start)
    return latency_summary(latencies), results


def _npz_bytes(matrix: sp.csr_matrix) -> int:
    buf = io.BytesIO()
    sp.save_npz(buf, matrix, compressed=True)
    return buf.tell()


def _recall(found: list[np.ndarray], exact: list[np.ndarray]) -> float:
    return float(np.mean([len(set(f.tolist()) & set(e.tolist())) / max(len(e), 1) for f, e in zip(found, exact, strict=True)]))


def measure_size(dense: np.ndarray, impacts: sp.csr_matrix, queries: EncodedTexts, quant: float, uni_k: int,
                 cfg: GrowthConfig, dense_cfg: DenseIndexConfig) -> dict:
    """Latency per mode, bytes per doc and dense recall@10 (vs Flat) on one synthetic corpus."""
    n = dense.shape[0]
    docids = [f"s{i}" for i in range(n)]
    batches = []
    for i in range(len(queries)):
        b = QueryBatch([f"q{i}"], [""])
        b.encoded = EncodedTexts(dense=queries.dense[i:i + 1], sparse=queries.sparse[i:i + 1])
        batches.append(b)
    row: dict = {"docs": n, "modes": {}, "bytes_per_doc": {}, "build_seconds": {}, "recall@10_vs_flat": {}}
    start = time.perf_counter()
    lexical = MemoryImpactIndex.from_impacts(docids, impacts, quant)
    row["build_seconds"]["lexical"] = round(time.perf_counter() - start, 2)
    post = lexical.postings
    row["bytes_per_doc"]["lexical_memory"] = round((post.data.nbytes + post.indices.nbytes + post.indptr.nbytes) / n, 1)
    row["bytes_per_doc"]["impacts_npz"] = round(_npz_bytes(impacts) / n, 1)
    row["mean_active_terms_doc"] = round(float(np.diff(impacts.indptr).mean()), 2)
    lex = LexicalSearcher(lexical)
    row["modes"]["lexical"], _ = _time(lambda b: lex.search_arrays(b, TOP), batches)
    exact = None
    searchers = {}
    for kind in cfg.dense_types:
        kind_cfg = dataclasses.replace(dense_cfg, type=kind, use_gpu=False,
                                       hnsw_ef_construction=cfg.hnsw_ef_construction)
        start = time.perf_counter()
        with all_cores():
            index = build_faiss_index(dense, kind_cfg)
        row["build_seconds"][f"dense_{kind}"] = round(time.perf_counter() - start, 2)
        row["bytes_per_doc"][f"dense_{kind}"] = round(len(faiss.serialize_index(index)) / n, 1)
        searchers[kind] = DenseSearcher(index, docids)
        row["modes"][f"dense_{kind}"], hits = _time(lambda b, s=searchers[kind]: s.search_arrays(b, TOP), batches)
        rows = [h[0][0] for h in hits]
        if kind == "flat":
            exact = rows
        elif exact is not None:
            row["recall@10_vs_flat"][kind] = round(_recall(rows, exact), 4)
    if "seismic" in cfg.sparse_engines and n > cfg.seismic_max_docs:
        row["seismic"] = {"skipped": f"{n} docs > seismic_max_docs {cfg.seismic_max_docs} (its build time)"}
    elif "seismic" in cfg.sparse_engines:
        row.update(seismic_figures(impacts, queries, quant, batches, lex, cfg))
    uni = UniSearcher(lexical, dense, uni_k)
    row["modes"]["uni"], _ = _time(lambda b: uni.search_batch(b, TOP), batches)
    dense_part = searchers.get("flat") or next(iter(searchers.values()))
    hybrid = FusionSearcher([lex, dense_part], "hybrid", uni_k)
    row["modes"]["hybrid"], _ = _time(lambda b: hybrid.search_batch(b, TOP), batches)
    return row


def seismic_figures(impacts: sp.csr_matrix, queries: EncodedTexts, quant: float, batches: list[QueryBatch],
                    exact: LexicalSearcher, cfg: GrowthConfig) -> dict:
    """Seismic (approximate learned-sparse retrieval, pyseismic-lsr) on the same impacts and queries:
    build time, p50 latency and recall@10 against the exact in-memory index."""
    try:
        from seismic import SeismicDataset, SeismicIndex, get_seismic_string
    except ImportError:
        return {"seismic": {"skipped": "pyseismic-lsr is not installed"}}
    from uniret.retrieval.sparse import quantize

    text = get_seismic_string()  # the token dtype its bindings expect
    start = time.perf_counter()
    dataset = SeismicDataset()
    for i in range(impacts.shape[0]):
        lo, hi = impacts.indptr[i], impacts.indptr[i + 1]
        dataset.add_document(str(i), impacts.indices[lo:hi].astype(str).astype(text),
                             impacts.data[lo:hi].astype(np.float32))
    index = SeismicIndex.build_from_dataset(dataset, n_postings=cfg.seismic_n_postings)
    build = round(time.perf_counter() - start, 2)
    q = quantize(queries.sparse, quant)

    def search(i: int):
        lo, hi = q.indptr[i], q.indptr[i + 1]
        terms = q.indices[lo:hi].astype(str).astype(text)
        return index.search(str(i), terms, q.data[lo:hi].astype(np.float32), TOP, max(hi - lo, 1), cfg.seismic_heap_factor)

    position = {id(b): i for i, b in enumerate(batches)}
    summary, hits = _time(lambda b: search(position[id(b)]), batches)
    found = [np.array([int(h[2]) for h in res], dtype=np.int64) for res in hits]
    want = [exact.search_arrays(b, TOP)[0][0] for b in batches]
    return {"seismic": {**summary, "build_seconds": build, "recall@10_vs_exact": round(_recall(found, want), 4),
                        "n_postings": cfg.seismic_n_postings, "heap_factor": cfg.seismic_heap_factor}}


def choose_dense(row: dict, cfg: GrowthConfig) -> str:
    """The fastest dense index whose recall@10 against Flat reaches `min_recall` (Flat is exact)."""
    ok = ["flat"] + [k for k, r in row["recall@10_vs_flat"].items() if r >= cfg.min_recall]
    timed = {k: row["modes"][f"dense_{k}"]["p50_ms"] for k in ok if f"dense_{k}" in row["modes"]}
    return min(timed, key=timed.get) if timed else "flat"


def growth_curve(bundle, queries: dict[str, str], cfg: GrowthConfig, out_dir: Path) -> dict:
    """Rows per corpus size, the dense index chosen at each size, and growth.png in `out_dir`."""
    from uniret.retrieval.dense import doc_vectors, load_faiss_index

    dense_file, impacts_file = Path(bundle.path) / "dense.faiss", Path(bundle.path) / "impacts.npz"
    if not dense_file.is_file() or not impacts_file.is_file():
        raise ValueError(f"{bundle.path}: growth needs a bundle with dense.faiss and impacts.npz")
    vectors, impacts = doc_vectors(load_faiss_index(dense_file)), sp.load_npz(impacts_file)
    texts = list(queries.values())[: cfg.queries]
    encoded = bundle.encoder.encode(texts, is_query=True)
    rng = np.random.default_rng(cfg.seed)
    quant = bundle.retrieval.lexical.quant
    rows = []
    for n in cfg.sizes:
        start = time.perf_counter()
        dense, sparse = synthesise(np.asarray(vectors, dtype=np.float32), sp.csr_matrix(impacts), n, cfg, rng)
        row = measure_size(dense, sparse, encoded, quant, bundle.retrieval.uni.k, cfg, bundle.retrieval.dense)
        row["choice"] = choose_dense(row, cfg)
        row["seconds"] = round(time.perf_counter() - start, 1)
        log.info("growth %d docs: %s", n, row)
        rows.append(row)
    out = {"method": " ".join(__doc__.split("\n\n")[1].split()), "queries": len(texts), "rows": rows,
           "real_docs": int(vectors.shape[0])}
    out["plot"] = plot_growth(rows, Path(out_dir) / PLOT)
    return out


def plot_growth(rows: list[dict], path: Path) -> str:
    """Latency p50 and bytes/doc against corpus size (log-log); returns the file name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    docs = [r["docs"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for mode in rows[0]["modes"]:
        ax1.plot(docs, [r["modes"][mode]["p50_ms"] for r in rows], marker="o", label=mode)
    for part in rows[0]["bytes_per_doc"]:
        ax2.plot(docs, [r["bytes_per_doc"][part] for r in rows], marker="o", label=part)
    for ax, title, unit in ((ax1, "p50 latency (batch 1, pre-encoded)", "ms"), (ax2, "index size", "bytes / doc")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("documents (synthetic)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name
