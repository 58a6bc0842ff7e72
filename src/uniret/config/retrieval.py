"""Config of the retrieval modes (dense, lexical, uni, fusion, exhaustive) and of the index stage."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from uniret.config.modes import BM25_SIGNALS, DEFAULT_MODES, FAST_RUNS, MODES


@dataclass
class DenseIndexConfig:
    """faiss index over the dense vectors (inner product)."""

    type: Literal["flat", "hnsw", "ivfpq"] = "flat"  # flat is exact; fine below ~1M vectors
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200  # STACK.md: HNSW needs >= 200 to reach high recall
    hnsw_ef_search: int = 128
    ivf_nlist: int = 1024  # clamped to the corpus size at build time (faiss wants ~39 points per list)
    ivf_nprobe: int = 32
    pq_m: int = 16  # sub-quantizers; must divide the vector dimension
    pq_nbits: int = 8
    use_gpu: bool = True  # only when faiss sees a GPU (faiss-gpu images)

    def validate(self) -> None:
        for name in ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "ivf_nlist", "ivf_nprobe", "pq_m"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 1 <= self.pq_nbits <= 16:
            raise ValueError(f"pq_nbits must be in [1, 16], got {self.pq_nbits}")


@dataclass
class LexicalConfig:
    """Learned-sparse (impact) retrieval: integer impacts round(quant * w) in a Lucene impact index."""

    quant: float = 100.0  # STACK.md: Lucene impacts are ints; floats are silently truncated
    top_n: int | None = None  # keep the N largest terms per document (UnifieR Table 6); None keeps all

    def validate(self) -> None:
        if self.quant <= 0:
            raise ValueError(f"quant must be positive, got {self.quant}")
        if self.top_n is not None and self.top_n <= 0:
            raise ValueError(f"top_n must be positive or null, got {self.top_n}")


@dataclass
class UniConfig:
    """UnifieR §3.4 uni-retrieval: lexical top-K, then lexical + dense score of those candidates."""

    k: int = 1000  # paper Fig. 6: MRR@10 saturates at K=1000 (R@1000 at 2048, its appendix setting)

    def validate(self) -> None:
        if self.k <= 0:
            raise ValueError(f"k must be positive, got {self.k}")


@dataclass
class FusionConfig:
    """Hybrid fusion of two or more runs: min-max interpolation (`hybrid`) and reciprocal rank (`rrf`)."""

    runs: list[str] = field(default_factory=lambda: ["lexical", "dense"])
    # hybrid: score = sum_i w_i * minmax(run_i); with two runs w = (alpha, 1 - alpha), unless the
    # bundle records weights learned on the dev split (index stage, `index.fusion`)
    # hybrid_bm25: the same over `runs` + BM25 as one more signal
    alpha: float = 0.5
    # hybrid_bm25's BM25 signal: plain BM25, or BM25 with RM3 expansion (bm25.rm3; why bm25: E24);
    # bundles built before this setting existed fuse plain BM25 (retrieval.bundle)
    bm25_signal: Literal["bm25", "bm25_rm3"] = "bm25"
    rrf_k: int = 60  # Cormack et al. 2009
    depth: int = 1000  # docs taken from each fused run
    # docs taken from BM25's run; 100 is faster at the same dev score but costs NPL recall (why 1000: E20)
    bm25_depth: int = 1000
    # hybrid_fast: the runs it fuses (no transformer on the query path) and the docs taken from each
    # (dense_feedback: the static dense query moved toward BM25's top documents; why not dense_static: E46)
    fast_runs: list[str] = field(default_factory=lambda: ["bm25", "lexical_static", "dense_feedback"])
    fast_depth: int = 150  # why: E44 (E36 chose 300 before the routes were compiled)
    # hybrid_fast's BM25 route: `memory` holds Lucene's BM25 term weights (read once from the index)
    # as an inverted index, the same ranking with no Java search (up to retrieval.memory_max_docs
    # documents); `lucene` searches the BM25 index (why memory: E43)
    fast_bm25: Literal["memory", "lucene"] = "memory"
    # hybrid_fast's dense route over a flat index: fast_shortlist x fast_depth candidates from 4-bit
    # PQ fast-scan codes, ranked by their exact scores; 0 scans every vector, the ranking Milvus's
    # FLAT index gives (a shortlist's missed tail moves the min-max fusion's scale: why 0, E51)
    fast_shortlist: float = 0.0
    # dense_feedback: BM25's top feedback_docs documents, their unit mean vector added to the static
    # query vector at feedback_weight (Rocchio with BM25 as the first pass; why 3 and 0.5: E46)
    feedback_docs: int = 3
    feedback_weight: float = 0.5

    def depth_of(self, run: str) -> int:
        """How many docs a fusion takes from `run`."""
        return self.bm25_depth if run in BM25_SIGNALS else self.depth

    def validate(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if len(self.runs) < 2:
            raise ValueError(f"runs must name at least two modes, got {self.runs}")
        bad = [r for r in self.runs if r not in ("bm25", "dense", "lexical", "uni")]
        if bad:
            raise ValueError(f"runs: cannot fuse {bad}; choose from bm25, dense, lexical, uni")
        bad = [r for r in self.fast_runs if r not in FAST_RUNS]
        if bad or len(self.fast_runs) < 2:
            raise ValueError(f"fast_runs: cannot fuse {self.fast_runs}; name two or more of {', '.join(FAST_RUNS)}")
        if self.rrf_k < 0 or self.depth <= 0 or self.bm25_depth <= 0 or self.fast_depth <= 0:
            raise ValueError("rrf_k must be >= 0, depth, bm25_depth and fast_depth positive")
        if self.feedback_docs < 1 or self.feedback_weight < 0:
            raise ValueError(f"feedback_docs must be >= 1 and feedback_weight >= 0, got {self.feedback_docs} "
                             f"and {self.feedback_weight}")
        if self.fast_shortlist < 0:
            raise ValueError(f"fast_shortlist must be >= 0 (0: no shortlist), got {self.fast_shortlist}")


@dataclass
class PruningConfig:
    """Large corpora: routes that read part of their postings and vectors instead of all (why: E52).

    Sparse (off in params since E55: summing every posting is exact and faster; it saves memory): every
    posting list cut to its largest `posting_share` x docs weights, the cut lists summed for
    `candidates(docs)` documents, those scored exactly from the documents' rows (retrieval/postings.py,
    PrunedPostings). Dense: an IVF index of 4-bit PQ codes names `ivf_candidates` x k documents, scored
    exactly from the flat vectors (retrieval/dense.py, build_ivf_shortlist). Both approximate:
    the bench measures their top-10 agreement with the exhaustive routes (uniret.bench.growth)."""

    # the in-memory BM25 and impact routes' lists cut at and above; None: never (every posting summed block-wise
    # is exact and faster at 1M: E55)
    sparse_min_docs: int | None = None
    posting_share: float = 0.02  # postings kept per term, as a share of the corpus
    sparse_candidates: int = 1000  # documents scored exactly per query: at least this many...
    candidates_share: float = 0.003  # ...or this share of the corpus, when larger
    # hybrid_fast's dense route shortlisted by an IVF index at and above (below: every vector scanned, the ranking
    # Milvus's FLAT index gives, E51; why 20k: E61); None: never
    dense_min_docs: int | None = 20_000
    ivf_points_per_list: int = 256  # IVF lists: corpus size / this
    ivf_nprobe: int = 64  # lists scanned per query (E53)
    ivf_candidates: int = 4  # documents the codes name per query, scored exactly: this many times k (E56)
    ivf_train_points: int = 64  # k-means trains on this many sampled vectors per list (faiss asks >= 39)
    # hybrid_fast's routes that read no other route's hits run on a worker thread beside the caller's at
    # and above (their kernels hold no GIL); below, the handoff costs more than it overlaps (E54, E60, E61); None: never
    parallel_min_docs: int | None = 20_000
    seed: int = 13

    def posting_keep(self, n_docs: int) -> int:
        """Postings kept per term in a corpus of `n_docs` documents."""
        return max(1, math.ceil(self.posting_share * n_docs))

    def candidates(self, n_docs: int) -> int:
        """Documents scored exactly per query in a corpus of `n_docs` documents."""
        return max(self.sparse_candidates, math.ceil(self.candidates_share * n_docs))

    def sparse(self, n_docs: int) -> bool:
        """Whether a corpus of `n_docs` documents has its posting lists pruned."""
        return self.sparse_min_docs is not None and n_docs >= self.sparse_min_docs

    def dense(self, n_docs: int) -> bool:
        """Whether a corpus of `n_docs` documents has hybrid_fast's dense route shortlisted by IVF."""
        return self.dense_min_docs is not None and n_docs >= self.dense_min_docs

    def parallel(self, n_docs: int) -> bool:
        """Whether hybrid_fast over a corpus of `n_docs` documents runs its independent routes on a worker."""
        return self.parallel_min_docs is not None and n_docs >= self.parallel_min_docs

    def validate(self) -> None:
        if min(self.sparse_min_docs or 0, self.dense_min_docs or 0, self.parallel_min_docs or 0) < 0:
            raise ValueError("sparse_min_docs, dense_min_docs and parallel_min_docs must be >= 0 or null")
        if min(self.ivf_points_per_list, self.ivf_nprobe, self.ivf_train_points, self.ivf_candidates,
               self.sparse_candidates) <= 0:
            raise ValueError("ivf_points_per_list, ivf_nprobe, ivf_train_points, ivf_candidates and sparse_candidates "
                             "must be positive")
        if not 0.0 < self.posting_share <= 1.0 or not 0.0 <= self.candidates_share <= 1.0:
            raise ValueError(f"posting_share must be in (0, 1] and candidates_share in [0, 1], got "
                             f"{self.posting_share} and {self.candidates_share}")


@dataclass
class RetrievalConfig:
    """The `retrieval` section: which modes to build and each mode's parameters."""

    modes: list[str] = field(default_factory=lambda: list(DEFAULT_MODES))
    k: int = 1000  # depth of every run
    query_batch_size: int = 64  # query lengths come from the model's config (what it was trained with)
    dense: DenseIndexConfig = field(default_factory=DenseIndexConfig)
    lexical: LexicalConfig = field(default_factory=LexicalConfig)
    # where a bundle's lexical / uni searches run: `lucene` (the impact index), `memory` (impacts.npz
    # as an in-memory inverted index; same ranking, no JNI per hit, no Java lock) or `auto`
    # (memory up to memory_max_docs documents, Lucene above)
    lexical_backend: Literal["lucene", "memory", "auto"] = "auto"
    # what hybrid_fast holds in memory at 1M synthetic docs: ~4.7 KB a doc (E53), so 2M docs ~ 9.5 GB of RAM
    memory_max_docs: int = 2_000_000
    uni: UniConfig = field(default_factory=UniConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    pruning: PruningConfig = field(default_factory=PruningConfig)

    def validate(self) -> None:
        bad = [m for m in self.modes if m not in MODES]
        if bad:
            raise ValueError(f"modes: unknown {bad}; known: {', '.join(MODES)}")
        if self.k <= 0 or self.query_batch_size <= 0:
            raise ValueError("k and query_batch_size must be positive")
        if self.memory_max_docs < 0:
            raise ValueError(f"memory_max_docs must be >= 0, got {self.memory_max_docs}")


@dataclass
class ParityConfig:
    """Checks that the ONNX encoders reproduce the torch model (the index stage fails otherwise)."""

    min_cosine: float = 0.9999  # per text, dense and sparse outputs, query and document encoders
    min_top10_overlap: float = 0.95  # mean over queries, rankings of the parity docs
    queries: int = 64  # real queries (train split) used for the check
    docs: int = 500  # real documents used for the check (and the torch-vs-ORT speed figure)

    def validate(self) -> None:
        if not 0.0 < self.min_cosine <= 1.0 or not 0.0 <= self.min_top10_overlap <= 1.0:
            raise ValueError("min_cosine must be in (0, 1] and min_top10_overlap in [0, 1]")
        if self.queries <= 0 or self.docs <= 0:
            raise ValueError("queries and docs must be positive")


@dataclass
class QuantizeConfig:
    """int8 dynamic quantisation of the query encoder (uniret.export.quantize): used only when the
    int8 graph's per-query cosine to the fp32 graph reaches `min_cosine` on the parity queries."""

    enabled: bool = True
    min_cosine: float = 0.999
    per_channel: bool = False
    # parity documents the int8 query graph is ranked over (the first of export.parity's): its top-10
    # overlap needs a few hundred candidates, not a second pass over every parity document
    docs: int = 128

    def validate(self) -> None:
        if not 0.0 < self.min_cosine <= 1.0:
            raise ValueError(f"min_cosine must be in (0, 1], got {self.min_cosine}")
        if self.docs <= 0:
            raise ValueError(f"docs must be positive, got {self.docs}")


@dataclass
class DocQuantizeConfig:
    """int8 dynamic quantisation of the document encoder for the corpus passes (index, evaluate):
    kept when, on `docs` parity documents, every document's int8 output has cosine >= `min_cosine`
    with the fp32 output and real queries' top-10 over them overlap >= `min_top10_overlap`.
    Per-channel weights with reduced range: per-tensor int8 bent MiniLM's vectors to cosine 0.90 (min)."""

    enabled: bool = False
    per_channel: bool = True
    reduce_range: bool = True
    min_cosine: float = 0.98
    min_top10_overlap: float = 0.9
    docs: int = 128

    def validate(self) -> None:
        if not 0.0 < self.min_cosine <= 1.0 or not 0.0 <= self.min_top10_overlap <= 1.0:
            raise ValueError("min_cosine must be in (0, 1] and min_top10_overlap in [0, 1]")
        if self.docs <= 0:
            raise ValueError(f"docs must be positive, got {self.docs}")


@dataclass
class ExportConfig:
    """torch -> ONNX export of the query and document encoders."""

    opset: int = 18
    dynamo: bool = True  # STACK.md: dynamo (opset 18) and the legacy exporter both work
    parity: ParityConfig = field(default_factory=ParityConfig)
    quantize: QuantizeConfig = field(default_factory=QuantizeConfig)
    quantize_docs: DocQuantizeConfig = field(default_factory=DocQuantizeConfig)


@dataclass
class FusionTuningConfig:
    """Fusion weights learned by the index stage on the dev split (data.dev), per fusion mode."""

    enabled: bool = True
    grid_step: float = 0.05  # weights on the simplex in steps of this size
    metric: str = "ndcg@10"
    # {fusion mode: weights} for the corpora other than the train dataset when no dev set lies away from
    # it (the loop's: its traffic domain's dev split only), instead of the weights learned on that domain;
    # the loop carries production's here every night (why: E77). Empty: the learned weights everywhere.
    zero_shot_weights: dict[str, list[float]] = field(default_factory=dict)

    def validate(self) -> None:
        if not 0.0 < self.grid_step <= 0.5:
            raise ValueError(f"grid_step must be in (0, 0.5], got {self.grid_step}")
        for mode, weights in self.zero_shot_weights.items():
            if not weights or any(w < 0 for w in weights) or sum(weights) <= 0:
                raise ValueError(f"zero_shot_weights.{mode} must be non-negative weights with a positive sum, "
                                 f"got {weights}")


@dataclass
class StaticQueryConfig:
    """The query side with no transformer, built by the index stage (uniret.training.static_tower):
    a token weight table (IDF of the indexed corpus) and a static dense tower (token vectors from
    the trained query encoder, distilled toward its output on pseudo-queries)."""

    enabled: bool = True
    # distillation texts, never a dev or test query: the train split's queries outside the dev carve,
    # the train corpus's titles, and sentences of the train corpus and of every other eval corpus
    # (documents only: a served corpus is known when its index is built)
    train_queries: bool = True
    titles: bool = True
    sentences: int = 8000  # sentences drawn from the train corpus
    other_corpus_sentences: int = 1500  # sentences drawn from each other eval corpus (0: none)
    min_words: int = 4  # a sentence shorter than this is no pseudo-query
    max_words: int = 40
    epochs: int = 4
    batch_size: int = 256
    lr: float = 0.003
    init_batch: int = 1024  # vocabulary tokens per forward pass of the token-vector initialisation
    # which tokens the initialisation encodes: all (every vocabulary token), or seen (the tokens of the
    # indexed documents, the distillation texts and the fine-tuning queries; the others start at zero)
    init_vocab: str = "all"
    seed: int = 7
    # a corpus other than the bundle's (zero-shot sets, NFCorpus dev) is searched with the IDF of its own
    # documents, as a bundle built over it would be; false: the bundle's table everywhere
    corpus_idf: bool = True
    # then fine-tuning against the frozen document vectors: the train queries outside the dev carve,
    # contrastive over the whole corpus, the distillation loss kept as an anchor (0 epochs: none)
    finetune_epochs: int = 10  # E41
    finetune_lr: float = 0.001
    finetune_batch_size: int = 64
    finetune_temperature: float = 0.05
    finetune_anchor: float = 1.0  # weight of the distillation (cosine) loss on a batch of pseudo-queries
    # what it is fine-tuned on: the train split's judged queries (labels) and the feedback stage's
    # clicks of the training days (ips: IPS-weighted, naive: weight 1, none: not used), each click
    # example weighted clicks_weight relative to a labelled query (without labels it changes nothing:
    # the loss is a weighted mean, E71); the logged query texts of the
    # training days join the distillation texts (docs/learning-loop.md)
    train_labels: bool = True
    clicks: str = "ips"
    clicks_weight: float = 1.0
    # one example per (query text, doc): its click weights summed ("sum"), or that sum over the times it
    # was shown ("rate": a head query's noise clicks stop outweighing a tail query's one click; E72)
    clicks_aggregate: str = "sum"
    logged_queries: bool = True

    def validate(self) -> None:
        if self.clicks not in ("ips", "naive", "none"):
            raise ValueError(f"clicks must be ips, naive or none, got {self.clicks!r}")
        if self.clicks_weight < 0:
            raise ValueError(f"clicks_weight must be >= 0, got {self.clicks_weight}")
        if self.init_vocab not in ("all", "seen"):
            raise ValueError(f"init_vocab must be all or seen, got {self.init_vocab!r}")
        if self.clicks_aggregate not in ("sum", "rate"):
            raise ValueError(f"clicks_aggregate must be sum or rate, got {self.clicks_aggregate!r}")
        for name in ("epochs", "batch_size", "init_batch", "min_words", "max_words", "finetune_batch_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.finetune_epochs < 0 or self.finetune_lr <= 0 or self.finetune_temperature <= 0 or self.finetune_anchor < 0:
            raise ValueError("finetune_epochs and finetune_anchor must be >= 0, finetune_lr and "
                             "finetune_temperature positive")
        if self.sentences < 0 or self.other_corpus_sentences < 0 or self.lr <= 0:
            raise ValueError("sentences and other_corpus_sentences must be >= 0, lr positive")
        if self.min_words > self.max_words:
            raise ValueError(f"min_words ({self.min_words}) exceeds max_words ({self.max_words})")


@dataclass
class IndexConfig:
    """The `index` section: which checkpoint to index and which encoder encodes the corpus (batch: `encoding`)."""

    source_stage: Literal["auto", "distill", "continual", "warmup"] = "auto"
    corpus_encoder: Literal["onnx", "torch"] = "onnx"  # onnx: the same graph serving runs
    export: ExportConfig = field(default_factory=ExportConfig)
    fusion: FusionTuningConfig = field(default_factory=FusionTuningConfig)
    static_query: StaticQueryConfig = field(default_factory=StaticQueryConfig)
