"""Build every configured retrieval mode over one corpus's index structures.

`CorpusIndex` holds what the modes read (faiss index, document vectors, impact index, BM25 index);
it comes from a bundle on disk (retrieval/bundle.py) or from encodings held in memory
(`memory_corpus_index`, for eval corpora that have no bundle). `build_searchers` turns it into
{mode: Searcher} following the `retrieval` params section.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from uniret.config.retrieval import RetrievalConfig
from uniret.config.sections import Bm25Config
from uniret.retrieval.base import Searcher
from uniret.retrieval.bm25 import Bm25ModeSearcher
from uniret.retrieval.bm25_memory import MemoryBm25Searcher
from uniret.retrieval.clear import ClearSearcher
from uniret.retrieval.dense import DenseSearcher, build_faiss_index, build_ivf_shortlist, to_search_device
from uniret.retrieval.encoding import EncodedTexts, TextEncoder
from uniret.retrieval.exhaustive import ExhaustiveSearcher
from uniret.retrieval.faiss_loader import faiss
from uniret.retrieval.feedback import FeedbackDenseSearcher
from uniret.retrieval.fusion import FusionSearcher
from uniret.retrieval.lexical import ImpactIndex, LexicalSearcher, MemoryImpactIndex
from uniret.retrieval.static_query import StaticQueryEncoder, StaticRouteSearcher
from uniret.retrieval.uni import UniSearcher

log = logging.getLogger("uniret.retrieval")


@dataclass
class CorpusIndex:
    """The index structures of one corpus; `provenance` says where each came from (for reports)."""

    docids: list[str]
    dense: faiss.Index | None = None
    doc_vectors: np.ndarray | None = None  # for uni / exhaustive scoring of candidates
    lexical: ImpactIndex | None = None
    impacts: MemoryImpactIndex | None = None  # in-memory impacts, for exhaustive scoring
    bm25_dir: Path | None = None
    # (terms, [docs, terms] CSR) Lucene's BM25 weights of bm25_dir's index, read ahead (a bundle's
    # bm25_weights.npz); None: hybrid_fast's in-memory BM25 reads them from the index when built
    bm25_weights: tuple[list[str], sp.csr_matrix] | None = None
    # BM25 answered by a search engine (uniret.milvus) instead of the Lucene index at bm25_dir
    bm25_searcher: Searcher | None = None
    bm25_weight: float | None = None  # CLEAR lambda_test of the indexed model (None: not a BM25-residual model)
    # {fusion mode: weights of its runs} learned on the dev split (index stage); absent: params' alpha
    fusion_weights: dict[str, list[float]] = field(default_factory=dict)
    # the bundle's query-side tables for the static modes (None: the bundle has none)
    static_query: StaticQueryEncoder | None = None
    provenance: dict[str, str] = field(default_factory=dict)


def memory_corpus_index(
    docids: list[str], encoded: EncodedTexts, cfg: RetrievalConfig, bm25_dir: Path | None = None,
    bm25_weight: float | None = None, fusion_weights: dict[str, list[float]] | None = None,
    static_query: StaticQueryEncoder | None = None,
) -> CorpusIndex:
    """Index structures built in memory from document encodings (faiss per params, exact impacts)."""
    index = CorpusIndex(docids=list(docids), bm25_dir=bm25_dir, bm25_weight=bm25_weight,
                        fusion_weights=dict(fusion_weights or {}), static_query=static_query)
    if encoded.dense is not None:
        index.doc_vectors = np.ascontiguousarray(encoded.dense, dtype=np.float32)
        index.dense = to_search_device(build_faiss_index(index.doc_vectors, cfg.dense), cfg.dense)
        index.provenance["dense"] = f"in-memory faiss {cfg.dense.type}"
    if encoded.sparse is not None:
        index.impacts = MemoryImpactIndex(docids, encoded.sparse, cfg.lexical.quant, cfg.lexical.top_n, cfg.pruning)
        index.lexical = index.impacts
        index.provenance["lexical"] = "in-memory impacts (exact sparse products, same quantization as Lucene)"
    if bm25_dir is not None:
        index.provenance["bm25"] = f"Lucene BM25 index {bm25_dir}"
    return index


def fused_runs(mode: str, cfg: RetrievalConfig) -> list[str]:
    """The modes whose runs a fusion mode fuses: fusion.runs, plus the BM25 signal for hybrid_bm25;
    fusion.fast_runs for hybrid_fast."""
    if mode == "hybrid_fast":
        return list(cfg.fusion.fast_runs)
    return [*cfg.fusion.runs, cfg.fusion.bm25_signal] if mode == "hybrid_bm25" else list(cfg.fusion.runs)


def _needs(mode: str, cfg: RetrievalConfig) -> set[str]:
    """Structures a mode reads."""
    if mode in ("hybrid", "hybrid_bm25", "hybrid_fast", "rrf"):
        return set().union(*(_needs(m, cfg) for m in fused_runs(mode, cfg)))
    return {
        "bm25": {"bm25"},
        "bm25_rm3": {"bm25_index"},  # RM3 reads the Lucene index's document vectors
        "dense": {"dense"},
        "lexical": {"lexical"},
        "uni": {"lexical", "vectors"},
        "uni_gated": {"lexical", "vectors", "gate"},
        "exhaustive": {"impacts", "vectors"},
        "clear": {"bm25", "dense", "bm25_weight"},
        "dense_static": {"dense", "static"},
        "dense_feedback": {"dense", "static", "bm25", "feedback_vectors"},
        "lexical_static": {"lexical", "static"},
    }[mode]


def build_searchers(
    index: CorpusIndex,
    cfg: RetrievalConfig,
    encoder: TextEncoder | None,
    bm25_cfg: Bm25Config | None = None,
    has_gate: bool = False,
    modes: list[str] | None = None,
) -> dict[str, Searcher]:
    """{mode: Searcher} for `modes` (default cfg.modes); modes whose inputs are missing are skipped
    with a log line naming what is missing (e.g. uni_gated for a model without a query gate, clear
    for a model not trained on BM25's residual)."""
    have = {
        "dense": index.dense is not None,
        "vectors": index.doc_vectors is not None,
        "lexical": index.lexical is not None,
        "impacts": index.impacts is not None,
        "bm25_index": index.bm25_dir is not None and bm25_cfg is not None,
        "bm25": index.bm25_searcher is not None or (index.bm25_dir is not None and bm25_cfg is not None),
        "gate": has_gate,
        "bm25_weight": index.bm25_weight is not None,
        "static": index.static_query is not None,
        "feedback_vectors": index.doc_vectors is not None or hasattr(index.dense, "vectors_of"),
    }
    built: dict[str, Searcher] = {}
    ivf: list[faiss.Index] = []  # the dense IVF shortlist, built on first use

    def make(mode: str) -> Searcher:
        if mode in built:
            return built[mode]
        if mode == "bm25" and index.bm25_searcher is not None:
            searcher: Searcher = index.bm25_searcher
        elif mode in ("bm25", "bm25_rm3"):
            searcher = Bm25ModeSearcher(index.bm25_dir, bm25_cfg, index.docids, rm3=mode == "bm25_rm3")
        elif mode == "dense":
            searcher = DenseSearcher(index.dense, index.docids, encoder, index.doc_vectors)
        elif mode == "lexical":
            searcher = LexicalSearcher(index.lexical, encoder)
        elif mode in ("uni", "uni_gated"):
            searcher = UniSearcher(index.lexical, index.doc_vectors, cfg.uni.k, gated=mode == "uni_gated", encoder=encoder)
        elif mode == "exhaustive":
            searcher = ExhaustiveSearcher(index.impacts, index.doc_vectors, encoder=encoder)
        elif mode == "dense_static":
            searcher = StaticRouteSearcher(DenseSearcher(index.dense, index.docids, vectors=index.doc_vectors),
                                           index.static_query, mode)
        elif mode == "lexical_static":
            searcher = StaticRouteSearcher(LexicalSearcher(index.lexical), index.static_query, mode)
        elif mode == "dense_feedback":  # its BM25 source is hybrid_fast's BM25 route, shared with it
            searcher = feedback_route(make("dense_static"))
        elif mode == "clear":
            searcher = ClearSearcher(make("bm25"), make("dense"), index.bm25_weight, cfg.fusion.depth)
        else:  # hybrid, hybrid_bm25, hybrid_fast, rrf
            names = fused_runs(mode, cfg)
            method = "rrf" if mode == "rrf" else "hybrid"
            depths = ([cfg.fusion.fast_depth] * len(names) if mode == "hybrid_fast"
                      else [cfg.fusion.depth_of(m) for m in names])
            parts = [fast_route(m) if mode == "hybrid_fast" else make(m) for m in names]
            searcher = FusionSearcher(parts, method, depths,
                                      cfg.fusion.alpha, cfg.fusion.rrf_k, weights=index.fusion_weights.get(mode),
                                      fixed_depths=mode == "hybrid_fast",
                                      parallel=mode == "hybrid_fast" and cfg.pruning.parallel(len(index.docids)))
            searcher.mode = mode
        built[mode] = searcher
        return searcher

    def fast_route(mode: str) -> Searcher:
        """hybrid_fast's route for `mode`: BM25 from its term weights in memory, the static dense
        route through the fast-scan shortlist (retrieval.fusion.fast_bm25 / fast_shortlist, E43)."""
        key = f"{mode}@fast"
        if key in built:
            return built[key]
        if (mode == "bm25" and cfg.fusion.fast_bm25 == "memory" and index.bm25_searcher is None
                and len(index.docids) <= cfg.memory_max_docs):
            built[key] = (MemoryBm25Searcher.from_weights(index.docids, *index.bm25_weights, bm25_cfg, cfg.pruning)
                          if index.bm25_weights is not None
                          else MemoryBm25Searcher.from_lucene(index.bm25_dir, bm25_cfg, index.docids, cfg.pruning))
        elif mode in ("dense_static", "dense_feedback") and index.doc_vectors is not None and (
                cfg.fusion.fast_shortlist or ivf_shortlisted()):
            if ivf_shortlisted():
                dense = DenseSearcher(index.dense, index.docids, vectors=index.doc_vectors,
                                      shortlist=cfg.pruning.ivf_candidates, fast_scan=ivf_index())
            else:
                dense = DenseSearcher(index.dense, index.docids, vectors=index.doc_vectors,
                                      shortlist=cfg.fusion.fast_shortlist)
            route = StaticRouteSearcher(dense, index.static_query, "dense_static")
            built[key] = route if mode == "dense_static" else feedback_route(route)
        else:
            built[key] = make(mode)
        return built[key]

    def ivf_shortlisted() -> bool:
        """Whether the dense route takes IVF codes' candidates: a large corpus (E52) in a CPU flat index,
        whose vectors score them exactly (any other index searches as it is, its codes never built)."""
        return cfg.pruning.dense(len(index.docids)) and isinstance(index.dense, faiss.IndexFlat)

    def ivf_index() -> faiss.Index:
        """The IVF shortlist of a large corpus's dense route, built once from its vectors (E52, E53)."""
        if not ivf:
            p = cfg.pruning
            start = time.perf_counter()
            ivf.append(build_ivf_shortlist(index.doc_vectors, p.ivf_points_per_list, p.ivf_nprobe,
                                           p.ivf_train_points, p.seed))
            log.info("dense IVF-PQ shortlist over %d vectors: %d lists, nprobe %d (%.1f s)", len(index.docids),
                     ivf[0].nlist, ivf[0].nprobe, time.perf_counter() - start)
        return ivf[0]

    def feedback_route(route: StaticRouteSearcher) -> FeedbackDenseSearcher:
        """`route` searched with the feedback query of BM25's top documents (E46)."""
        vectors = index.doc_vectors if index.doc_vectors is not None else index.dense.vectors_of  # Milvus: by row
        return FeedbackDenseSearcher(route, fast_route("bm25"), vectors, cfg.fusion.feedback_docs,
                                     cfg.fusion.feedback_weight)

    out: dict[str, Searcher] = {}
    for mode in modes or cfg.modes:
        missing = sorted(n for n in _needs(mode, cfg) if not have[n])
        if missing:
            log.info("retrieval mode %s skipped: missing %s", mode, ", ".join(missing))
            continue
        out[mode] = make(mode)
    return out
