"""The served mode as the corpus grows: `hybrid_fast` and each of its routes beside Lucene BM25.

At each size a synthetic corpus (uniret.bench.synthetic: texts, vectors and impacts copied from the
bundle's own documents) is indexed as the index stage would (a Lucene BM25 index of the texts, its
term weights read back, the impacts in memory, the vectors in a flat faiss index) and searched
through `retrieval.modes.build_searchers` with the bundle's static query tables and learned fusion
weights: what serving runs, query encoding included (the static tables and Lucene's analysis), batch
1, on the same real queries at every size. Every route is timed in three forms: exhaustive (every
posting summed, every vector scanned), pruned (posting lists cut to their largest weights with the
candidates scored exactly; the candidates an IVF index of PQ codes names, scored exactly from the
vectors; retrieval.pruning) and served (what params choose at that size: either, or the IVF shortlist
alone), each form's top-10 agreement with the exhaustive one beside it. Peak and resident memory are the process's.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import logging
import math
import os
import resource
import shutil
import time
from pathlib import Path

import numpy as np
import psutil

from uniret.bench.modes import side_by_side_figures, time_queries, time_side_by_side, warm_jvm
from uniret.bench.stats import latency_summary
from uniret.bench.synthetic import RealCorpus, SyntheticCorpus, shape_statistics
from uniret.config.retrieval import PruningConfig
from uniret.config.serving import GrowthConfig
from uniret.core.errors import ConfigError
from uniret.core.runs import ranked
from uniret.retrieval.dense import DenseSearcher, doc_vectors, load_faiss_index
from uniret.retrieval.faiss_loader import faiss
from uniret.retrieval.lexical import MemoryImpactIndex
from uniret.retrieval.modes import CorpusIndex, build_searchers
from uniret.retrieval.postings import pruned_postings
from uniret.utils.files import make_temp_dir

log = logging.getLogger("uniret.bench")

TOP = 10
PLOT = "growth.png"
ROUTES = ("bm25_memory", "lexical_static", "dense_feedback")  # hybrid_fast's routes, in its order


def _mb(nbytes: float) -> float:
    return round(nbytes / 2**20, 1)


def _rss() -> int:
    return psutil.Process().memory_info().rss


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def real_corpus(bundle, data_root: Path) -> RealCorpus:
    """The bundle's documents in every form: vectors and impacts from the bundle, texts from its dataset."""
    import scipy.sparse as sp

    from uniret.data.roots import open_dataset

    path = Path(bundle.path)
    dataset = open_dataset(data_root, bundle.manifest.get("train_dataset") or "scifact")
    texts = {d.id: d.contents for d in dataset.iter_corpus()}
    missing = [d for d in bundle.index.docids if d not in texts]
    if missing:
        raise ValueError(f"{dataset.corpus_path}: {len(missing)} of the bundle's doc ids are not in it (first {missing[0]})")
    return RealCorpus.from_texts(doc_vectors(load_faiss_index(path / "dense.faiss")), sp.load_npz(path / "impacts.npz"),
                                 [texts[d] for d in bundle.index.docids])


def time_search(search, queries: dict[str, str], warmup: int) -> tuple[dict, dict]:
    """Latency summary and run of `search({qid: text})`, batch 1 (uniret.bench.modes.time_queries)."""
    seconds, run = time_queries(search, queries, warmup, "growth")
    return latency_summary(seconds), run


def top10_agreement(found: dict, exact: dict) -> float:
    """Mean over queries of |top-10 of `found` & top-10 of `exact`| / |top-10 of `exact`|."""
    def top(run: dict, q: str) -> set:
        return {d for d, _ in ranked(run.get(q, {}), TOP)}

    shares = [len(top(found, q) & top(exact, q)) / max(len(top(exact, q)), 1) for q in exact]
    return round(float(np.mean(shares)), 4) if shares else 1.0


class ServedForms:
    """hybrid_fast's searchers over one corpus, switchable between the exhaustive and pruned forms."""

    def __init__(self, index: CorpusIndex, bundle, cfg, pruning: PruningConfig):
        """`cfg`: retrieval params that build every route exhaustive but the dense IVF shortlist (for the
        switch); the cut posting lists are made here, at `pruning`'s cut for this corpus size."""
        self.index = index
        self.searchers = build_searchers(index, cfg, None, bundle.bm25, modes=["bm25", "hybrid_fast"])
        self.fast = self.searchers["hybrid_fast"]
        self.routes = dict(zip(ROUTES, self.fast.searchers, strict=True))
        self.holders = [index.impacts, self.routes["bm25_memory"]]  # what holds each sparse route's lists
        self.full = [h.postings for h in self.holders]
        self.static_route = self.routes["dense_feedback"].route
        self.ivf_dense = self.static_route.inner
        self.flat_dense = DenseSearcher(index.dense, index.docids, vectors=index.doc_vectors)
        n = len(index.docids)
        self.cut_at(pruning.posting_keep(n), pruning.candidates(n))

    def use(self, sparse: bool, dense: bool) -> None:
        """Cut posting lists (`sparse`) and the IVF shortlist (`dense`) on or off."""
        for holder, full, cut in zip(self.holders, self.full, self.pruned, strict=True):
            holder.postings = cut if sparse else full
        self.static_route.inner = self.ivf_dense if dense else self.flat_dense

    def cut_at(self, keep: int, candidates: int) -> None:
        """The pruned form's posting lists: `keep` postings a term, `candidates` documents rescored."""
        self.pruned = [pruned_postings(w, keep, candidates)
                       for w in (self.index.impacts.doc_impacts, self.routes["bm25_memory"].doc_weights)]


def index_corpus(corpus: SyntheticCorpus, bundle, work: Path, row: dict) -> CorpusIndex:
    """The structures serving holds for `corpus`, with build seconds per document in `row`."""
    from uniret.data.beir import Document
    from uniret.lexical.bm25 import index_documents
    from uniret.retrieval.bm25_memory import read_bm25_weights

    n, build = corpus.n, row["build_seconds_per_doc"]
    start = time.perf_counter()
    bm25_dir = work / "bm25"
    index_documents((Document(i, "", t) for i, t in corpus.texts()), bm25_dir, bundle.bm25, total=n)
    build["lucene_bm25"] = (time.perf_counter() - start) / n
    row["bytes_per_doc"] = {"lucene_bm25_disk": round(sum(p.stat().st_size for p in bm25_dir.rglob("*")
                                                            if p.is_file()) / n, 1)}
    start = time.perf_counter()
    weights = read_bm25_weights(bm25_dir, bundle.bm25, corpus.docids)
    build["bm25_weights"] = (time.perf_counter() - start) / n
    start = time.perf_counter()
    impacts = corpus.impacts()
    row["shape_ks"] = shape_statistics(corpus, impacts)
    memory = MemoryImpactIndex.from_impacts(corpus.docids, impacts, bundle.retrieval.lexical.quant)
    del impacts
    build["impacts"] = (time.perf_counter() - start) / n
    start = time.perf_counter()
    flat = faiss.IndexFlatIP(corpus.real.vectors.shape[1])
    flat.add(corpus.dense())
    build["dense_flat"] = (time.perf_counter() - start) / n
    return CorpusIndex(docids=corpus.docids, dense=flat, doc_vectors=doc_vectors(flat), lexical=memory,
                       impacts=memory, bm25_dir=bm25_dir, bm25_weights=weights,
                       fusion_weights=bundle.index.fusion_weights, static_query=bundle.index.static_query)


def measure_size(real: RealCorpus, bundle, pruning: PruningConfig, n: int, queries: dict[str, str],
                 cfg: GrowthConfig, work: Path, jvm_warmup: int = 0) -> dict:
    """One corpus size: build costs, memory, and each route's latency and agreement in both forms;
    `jvm_warmup` BM25 searches first (the JVM's JIT is the process's: the first size warms it, E100)."""
    retrieval = bundle.retrieval
    row: dict = {"docs": n, "build_seconds_per_doc": {}, "modes": {}}
    corpus = SyntheticCorpus(real, n, cfg.noise, cfg.swap_terms, cfg.seed)
    gc.collect()
    before = _rss()
    index = index_corpus(corpus, bundle, work, row)
    # every form measured at every size, switched per form by `ServedForms.use`: the routes built exhaustive
    # with the IVF shortlist beside them, and the BM25 route in memory (what pruning changes) at every size
    build_cfg = dataclasses.replace(retrieval, memory_max_docs=max(n, retrieval.memory_max_docs),
                                    pruning=dataclasses.replace(pruning, sparse_min_docs=None, dense_min_docs=0))
    start = time.perf_counter()
    forms = ServedForms(index, bundle, build_cfg, pruning)
    row["build_seconds_per_doc"]["searchers"] = (time.perf_counter() - start) / n
    row["build_seconds_per_doc"] = {k: float(f"{v:.3g}") for k, v in row["build_seconds_per_doc"].items()}
    gc.collect()
    row["rss_bytes_per_doc"] = round((_rss() - before) / n, 1)
    row["served_bytes_per_doc"] = _served_bytes(forms, n, pruning)
    row["peak_rss_mb"] = _mb(_peak_rss())
    depth = retrieval.fusion.fast_depth
    timed = {"hybrid_fast": (forms.fast, TOP), **{r: (s, depth) for r, s in forms.routes.items()}}
    if jvm_warmup:
        row["jvm_warmup"] = warm_jvm(forms.searchers["bm25"], queries, jvm_warmup, TOP)
    row["modes"]["lucene_bm25"], lucene = time_search(lambda q: forms.searchers["bm25"].search(q, TOP), queries,
                                                      cfg.warmup)
    runs: dict[str, dict] = {}
    base = row["modes"]["lucene_bm25"]["p50_ms"]
    # exhaustive, everything pruned, and what params serve at this size (either, or the IVF alone)
    served_switches = (pruning.sparse(n), pruning.dense(n))
    for form, switches in (("exhaustive", (False, False)), ("pruned", (True, True)), ("served", served_switches)):
        forms.use(*switches)
        for name, (searcher, k) in timed.items():
            summary, runs[f"{name}/{form}"] = time_search(lambda q, s=searcher, k=k: s.search(q, k), queries,
                                                          cfg.warmup)
            row["modes"].setdefault(name, {})[form] = summary
    row["served_switches"] = {"sparse": served_switches[0], "dense": served_switches[1]}
    row["side_by_side"] = served_side_by_side(forms, queries, cfg)  # forms: still as served
    for name, figures in row["modes"].items():
        if name == "lucene_bm25":
            continue
        figures["top10_agreement"] = top10_agreement(runs[f"{name}/pruned"], runs[f"{name}/exhaustive"])
        figures["served_top10_agreement"] = top10_agreement(runs[f"{name}/served"], runs[f"{name}/exhaustive"])
        figures["served_p50_vs_lucene_bm25"] = round(figures["served"]["p50_ms"] / base, 3)
    row["memory_bm25_vs_lucene_top10"] = top10_agreement(runs["bm25_memory/exhaustive"], lucene)
    row["ivf_nprobe"] = _nprobe_sweep(forms, queries, runs["dense_feedback/exhaustive"], cfg, depth)
    row["posting_share"] = _share_sweep(forms, queries, runs, cfg, depth, pruning)
    log.info("growth %d docs: %s", n, row)
    return row


def served_side_by_side(forms: ServedForms, queries: dict[str, str], cfg: GrowthConfig) -> dict:
    """Lucene BM25 and the served hybrid_fast (top 10) timed query by query, one after the other, for
    `cfg.side_by_side_rounds` rounds after an untimed one (the first size's first round ran 1.6x slow:
    E62): the served mode's ratio to BM25 at one moment (E62), with each round's."""
    searches = {"lucene_bm25": lambda q: forms.searchers["bm25"].search(q, TOP),
                "hybrid_fast": lambda q: forms.fast.search(q, TOP)}
    seconds = time_side_by_side(searches, queries, max(cfg.warmup, len(queries)), cfg.side_by_side_rounds)
    figures = side_by_side_figures(seconds, cfg.side_by_side_rounds, "lucene_bm25")
    lucene, fast = figures["lucene_bm25"], figures["hybrid_fast"]
    return {"rounds": cfg.side_by_side_rounds, "lucene_bm25_p50_ms": lucene["p50_ms"], "hybrid_fast_p50_ms": fast["p50_ms"],
            "hybrid_fast_p95_ms": fast["p95_ms"], "p50_vs_lucene_bm25": fast["p50_vs_lucene_bm25"],
            "per_round_vs_lucene_bm25": fast["per_round_vs_lucene_bm25"]}


def _nbytes(*arrays) -> int:
    return sum(a.nbytes for a in arrays)


def _served_bytes(forms: ServedForms, n: int, pruning: PruningConfig) -> dict:
    """Bytes per document of each structure serving holds at this size (the forms params choose)."""
    out = {}
    for name, full, cut in zip(("impacts", "bm25"), forms.full, forms.pruned, strict=True):
        forward = cut.fwd_data, cut.fwd_indices, cut.fwd_indptr
        lists = cut.lists if pruning.sparse(n) else full
        out[f"{name}_rows"] = round(_nbytes(*forward) / n, 1)
        out[f"{name}_lists"] = round(_nbytes(lists.data, lists.indices, lists.indptr) / n, 1)
    vectors = forms.index.doc_vectors
    out["dense_vectors"] = round(vectors.nbytes / n, 1)
    if pruning.dense(n):
        ivf = forms.ivf_dense.fast_scan  # its codes and ids (the flat vectors, counted above, score them)
        out["dense_ivf"] = round((ivf.ntotal * (ivf.code_size + 8) + ivf.nlist * vectors.shape[1] * 4) / n, 1)
    out["total"] = round(sum(out.values()), 1)
    return out


def _nprobe_sweep(forms: ServedForms, queries: dict[str, str], exact: dict, cfg: GrowthConfig, depth: int) -> list[dict]:
    """The dense route's p50 and top-10 agreement with the scan at each IVF nprobe of the sweep; its BM25
    feedback from the exhaustive BM25 route, so the figure is the IVF shortlist's alone."""
    forms.use(False, True)
    ivf = forms.ivf_dense.fast_scan
    kept, out = ivf.nprobe, []
    for nprobe in cfg.nprobe_sweep:
        ivf.nprobe = min(nprobe, ivf.nlist)
        summary, run = time_search(lambda q: forms.routes["dense_feedback"].search(q, depth), queries, cfg.warmup)
        out.append({"nprobe": ivf.nprobe, "nlist": ivf.nlist, "p50_ms": summary["p50_ms"],
                    "top10_agreement": top10_agreement(run, exact)})
    ivf.nprobe = kept
    return out


def _share_sweep(forms: ServedForms, queries: dict[str, str], runs: dict, cfg: GrowthConfig, depth: int,
                 pruning: PruningConfig) -> list[dict]:
    """The sparse routes' and hybrid_fast's p50 and top-10 agreement at each posting share and candidate
    count of the sweep (the dense route pruned as params say)."""
    out = []
    for share, candidates in itertools.product(cfg.posting_share_sweep, cfg.candidates_sweep):
        forms.cut_at(math.ceil(share * len(forms.index.docids)), candidates)
        forms.use(True, pruning.dense(len(forms.index.docids)))
        entry: dict = {"posting_share": share, "candidates": candidates, "kept_postings_per_doc": round(
            sum(len(p.lists.data) for p in forms.pruned) / len(forms.index.docids), 1)}
        for name, searcher, k in (("bm25_memory", forms.routes["bm25_memory"], depth),
                                  ("lexical_static", forms.routes["lexical_static"], depth),
                                  ("hybrid_fast", forms.fast, TOP)):
            summary, run = time_search(lambda q, s=searcher, k=k: s.search(q, k), queries, cfg.warmup)
            entry[name] = {"p50_ms": summary["p50_ms"], "top10_agreement": top10_agreement(run, runs[f"{name}/exhaustive"])}
        out.append(entry)
    return out


def check_fits_in_memory(real: RealCorpus, sizes: list[int]) -> None:
    """ConfigError before anything is built when the largest size cannot fit in this machine's RAM.

    The bound is a floor (one copy of the dense vectors, the documents' mean sparse entries and words):
    a size above it can never run, so it is refused instead of dying in an allocation."""
    docs = max(1, int(real.vectors.shape[0]))
    per_doc = (real.vectors.nbytes + real.impacts.data.nbytes + real.impacts.indices.nbytes
               + real.words.nbytes) / docs
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    largest = max(sizes)
    if largest * per_doc > ram:
        raise ConfigError(f"params bench.growth.sizes: {largest:,} documents need at least "
                          f"{largest * per_doc / 2**30:,.1f} GiB ({per_doc:,.0f} bytes per document), more than "
                          f"this machine's {ram / 2**30:,.1f} GiB of RAM; choose smaller sizes")


def growth_curve(bundle, queries: dict[str, str], cfg: GrowthConfig, out_dir: Path, data_root: Path,
                 pruning: PruningConfig, jvm_warmup: int = 0) -> dict:
    """Rows per corpus size (see the module doc) and growth.png in `out_dir`; `pruning`: the current
    params' switch (which form is served at each size); `jvm_warmup`: BM25 searches before the first
    size's timings (bench.jvm_warmup_queries)."""
    real = real_corpus(bundle, data_root)
    check_fits_in_memory(real, cfg.sizes)
    picked = dict(list(queries.items())[: cfg.queries])
    rows = []
    for n in cfg.sizes:
        start = time.perf_counter()
        Path(cfg.work_dir).mkdir(parents=True, exist_ok=True)
        work = make_temp_dir(cfg.work_dir, f"growth-{n}-")
        try:
            row = measure_size(real, bundle, pruning, n, picked, cfg, work, 0 if rows else jvm_warmup)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        row["seconds"] = round(time.perf_counter() - start, 1)
        rows.append(row)
        gc.collect()
    out = {"method": " ".join(__doc__.split("\n\n")[1].split()), "queries": len(picked), "rows": rows,
           "real_docs": int(real.vectors.shape[0]), "pruning": dataclasses.asdict(pruning),
           "fast_depth": bundle.retrieval.fusion.fast_depth}
    out["plot"] = plot_growth(rows, Path(out_dir) / PLOT)
    return out


def plot_growth(rows: list[dict], path: Path) -> str:
    """The served mode's p50 beside Lucene BM25's against corpus size, each point labelled with the
    side-by-side ratio when the row has one; every route's exhaustive (dashed) and pruned (dotted)
    forms drawn thin behind them, so the served form is what the eye reads."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    docs = [r["docs"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 5))
    for (name, color) in zip(("hybrid_fast", *ROUTES), ("C3", "C0", "C1", "C2"), strict=True):
        for form, style in (("exhaustive", "--"), ("pruned", ":")):
            ax.plot(docs, [r["modes"][name][form]["p50_ms"] for r in rows], style, color=color, linewidth=0.8,
                    alpha=0.45, label=f"{name} {form}")
    ax.plot(docs, [r["modes"]["lucene_bm25"]["p50_ms"] for r in rows], "k-o", linewidth=2, label="Lucene BM25 (top 10)")
    served = [r["modes"]["hybrid_fast"].get("served", r["modes"]["hybrid_fast"]["exhaustive"])["p50_ms"] for r in rows]
    ax.plot(docs, served, "-o", color="C3", linewidth=2.5, label="hybrid_fast as served")
    for n, ms, row in zip(docs, served, rows, strict=True):
        ratio = (row.get("side_by_side") or {}).get("p50_vs_lucene_bm25")
        if ratio is not None:
            ax.annotate(f"{ratio:.2f}x", (n, ms), textcoords="offset points", xytext=(0, 8), ha="center",
                        fontsize=8, color="C3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("documents (synthetic)")
    ax.set_ylabel("p50 ms (batch 1, query encoding included)")
    ax.set_title("hybrid_fast as served vs Lucene BM25 (labels: p50 ratio timed side by side)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name
