"""Config of the HTTP serving process (`uniret serve`) and of the benchmarks (`uniret bench`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

THREADS_PER_CORE = 4  # search threads per usable core when serve.threads is null


@dataclass
class ServeConfig:
    """The `serve` section: request bounds, concurrency and the admin token of `/admin/reload`."""

    host: str = "127.0.0.1"  # loopback by default: exposing the server is a deliberate choice
    port: int = 8000
    max_k: int = 1000  # largest k a /search request may ask for (a reranker reads up to 1,000)
    default_k: int = 10
    max_query_chars: int = 1000
    max_body_bytes: int = 16_384  # bodies above this are refused with 413 before JSON parsing
    # None: the mode the bundle's recipe serves (its manifest's serve_mode: uni, clear, dense),
    # else uni; a mode the bundle does not offer falls back to the first offered (logged)
    default_mode: str | None = None
    # served: the default mode plus every mode that runs no transformer on the query (bm25, the static
    # modes, hybrid_fast), so a bundle served in hybrid_fast never loads the ONNX query graph;
    # all: every mode the bundle offers (the transformer modes load the query graph)
    modes: Literal["served", "all"] = "served"
    workers: int = 2  # uvicorn processes; each loads the bundle and watches the pointer (why 2: E76)
    threads: int | None = None  # search threads per process (more requests wait in a queue); None: 4 per usable core
    # threads (first come, first served) for the searches of a mode that runs in Python under the GIL
    # (Searcher.gil_bound: the static modes, hybrid_fast): more only fight over the GIL (E43); 0: on the
    # request's event loop, no hand-off to a thread, and no request_timeout_s cut (why 0: E86)
    gil_searches: int = 0
    onnx_threads: int | None = None  # intra-op threads of the ONNX query encoder; None: onnxruntime's choice
    # OpenMP threads of one faiss search: concurrent requests already fill the cores, and OpenMP's
    # spinning threads collapse when the cores are oversubscribed (Flat 50k x 128, batch 1, loaded
    # 2-core box: 73 ms with 2 threads, 10 ms with 1). None: faiss' default (all cores)
    faiss_threads: int | None = 1
    # dynamic micro-batching of query encoding across concurrent requests (uniret.serving.batcher):
    # one encoder call takes up to batch_max queries, a query waits at most batch_wait_ms for company,
    # batch_workers batches run at once. Off by default: on the loaded 2-core box, 8 request threads
    # encoding directly (ORT runs concurrently) out-ran every batched setting (SPLADE-tiny, 16 clients)
    batch_max: int = 1  # 1: no batching
    batch_wait_ms: float = 2.0
    batch_workers: int = 2
    request_timeout_s: float = 10.0  # a /search slower than this answers 504
    admin_token: str | None = None  # the env var named by registry.token_env takes precedence
    probe_query: str = "protein folding in cells"  # run on every mode before a bundle goes live
    # seconds between two polls of the registry's production.json (with jitter, uniret.serving.watch):
    # every worker and replica reloads when its version changes, whoever the reload call reached.
    # 0: off, only /admin/reload changes the bundle (one process: refused with workers > 1)
    watch_interval_s: float = 5.0
    log_level: str = "warning"  # uvicorn's own log level

    def validate(self) -> None:
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be in 1..65535, got {self.port}")
        for name in ("max_k", "default_k", "max_query_chars", "max_body_bytes", "workers", "batch_max",
                     "batch_workers"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.gil_searches < 0:
            raise ValueError(f"gil_searches must be >= 0 (0: on the event loop), got {self.gil_searches}")
        if self.default_k > self.max_k:
            raise ValueError(f"default_k ({self.default_k}) cannot exceed max_k ({self.max_k})")
        for name in ("threads", "onnx_threads", "faiss_threads"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive or null, got {getattr(self, name)}")
        if self.batch_wait_ms < 0 or self.request_timeout_s <= 0:
            raise ValueError("batch_wait_ms must be >= 0 and request_timeout_s positive")
        if not self.probe_query.strip():
            raise ValueError("probe_query must be a non-empty query")
        if self.watch_interval_s < 0:
            raise ValueError(f"watch_interval_s must be >= 0, got {self.watch_interval_s}")
        if self.workers > 1 and self.watch_interval_s == 0:
            raise ValueError(f"workers {self.workers} needs watch_interval_s > 0: an /admin/reload reaches one "
                             "worker, the pointer watch brings the others to the promoted bundle")
        if self.admin_token is not None and not self.admin_token:
            raise ValueError("admin_token must be null or a non-empty string")

    def search_threads(self) -> int:
        """`threads`, else 4 per core this process may use (requests mostly wait on the encoder batch)."""
        if self.threads is not None:
            return self.threads
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return THREADS_PER_CORE * cores


@dataclass(kw_only=True)
class HttpBenchConfig:
    """Serving latency over HTTP: a real uvicorn on 127.0.0.1, bounded in requests and time.

    bench.http and bench.stage.http differ in depth: those fields have no default here.
    """

    concurrency: list[int]
    requests_per_level: int  # total requests per concurrency level (across clients)
    max_seconds: float  # per level; the run stops early when reached
    mode: str | None = None  # None: the mode the bundle serves (the bench stage: the gate's candidate mode)
    k: int = 10
    startup_timeout_s: float  # the server loads the bundle (JVM, ONNX) before /readyz is 200
    # the same server in this mode at every concurrency level: the HTTP stack's ceiling (None: off)
    reference_mode: str | None = "bm25"
    # a level's requests in this many rounds, the mode and the reference mode taking turns, each round
    # on new connections (which land unevenly on the uvicorn workers): figures are over all rounds
    rounds: int
    # requests per mode, at the highest concurrency, before the first level: every worker's paths warm,
    # Lucene's JIT in the server's JVM among them (a cold one read bm25 at half its QPS: E98)
    warmup_requests: int

    def validate(self) -> None:
        if self.warmup_requests < 0:
            raise ValueError(f"warmup_requests must be >= 0, got {self.warmup_requests}")
        if not self.concurrency or any(c <= 0 for c in self.concurrency):
            raise ValueError(f"concurrency must list positive client counts, got {self.concurrency}")
        if self.requests_per_level <= 0 or self.max_seconds <= 0 or self.startup_timeout_s <= 0:
            raise ValueError("requests_per_level, max_seconds and startup_timeout_s must be positive")
        if self.rounds <= 0 or self.rounds > self.requests_per_level:
            raise ValueError(f"rounds must be between 1 and requests_per_level, got {self.rounds}")


@dataclass
class GrowthConfig:
    """The served mode as the corpus grows (uniret.bench.growth): synthetic corpora from the bundle's documents."""

    sizes: list[int] = field(default_factory=lambda: [10_000, 30_000, 100_000, 300_000, 1_000_000])
    queries: int = 100  # real queries, searched batch 1 at every size
    warmup: int = 20  # untimed queries per route and form (Lucene's JIT, numba's first call)
    side_by_side_rounds: int = 5  # rounds of Lucene BM25 and the served mode timed query by query (E62)
    noise: float = 0.1  # dense: Gaussian noise x per-dimension std; sparse: log-normal sigma of impacts
    swap_terms: float = 0.2  # fraction of a copied document's words and terms replaced
    nprobe_sweep: list[int] = field(default_factory=lambda: [16, 32, 64, 128])  # the dense IVF route's
    posting_share_sweep: list[float] = field(default_factory=lambda: [0.01, 0.02, 0.05])  # the sparse routes' cut...
    candidates_sweep: list[int] = field(default_factory=lambda: [1000, 3000])  # ...and documents rescored
    work_dir: str = ".cache/growth"  # the synthetic Lucene indexes (removed after each size)
    seed: int = 13

    def validate(self) -> None:
        if (not self.sizes or any(n <= 0 for n in self.sizes) or self.queries <= 0 or self.warmup < 0
                or self.side_by_side_rounds <= 0):
            raise ValueError("sizes, queries and side_by_side_rounds must be positive, warmup >= 0")
        if not self.nprobe_sweep or min(self.nprobe_sweep) <= 0:
            raise ValueError(f"nprobe_sweep must list positive values, got {self.nprobe_sweep}")
        if not self.posting_share_sweep or not all(0 < s <= 1 for s in self.posting_share_sweep):
            raise ValueError(f"posting_share_sweep must list shares in (0, 1], got {self.posting_share_sweep}")
        if not self.candidates_sweep or min(self.candidates_sweep) <= 0:
            raise ValueError(f"candidates_sweep must list positive counts, got {self.candidates_sweep}")


@dataclass
class BenchTargets:
    """The speed targets bench.md reports each measurement against (reported, never asserted)."""

    uni_vs_bm25_p50: float = 1.1  # uni-retrieval p50 / BM25 p50, query encoding included
    fast_vs_bm25_p50: float = 1.5  # hybrid_fast p50 / BM25 p50 (no transformer on the query path)
    onnx_speedup_p50: float = 2.0  # ONNX Runtime over torch eager, batch-1 query encoding
    http_p95_ms: float = 50.0
    http_qps: float = 600.0
    http_clients: int = 16  # the concurrency the serving targets are stated at
    # the served mode's QPS over the same server's in bm25 mode at http_clients (issue 58)
    http_qps_vs_reference: float = 0.8
    http_p50_overhead_ms: float = 1.5  # 1-client HTTP p50 minus the served mode's in-process p50 (issue 58)

    def validate(self) -> None:
        if min(self.uni_vs_bm25_p50, self.onnx_speedup_p50, self.http_p95_ms, self.http_qps,
               self.http_qps_vs_reference, self.http_p50_overhead_ms) <= 0:
            raise ValueError("bench targets must be positive")
        if self.http_clients <= 0:
            raise ValueError(f"http_clients must be positive, got {self.http_clients}")


@dataclass(kw_only=True)
class BenchStageConfig:
    """The DAG's `bench` stage: a short run on the candidate bundle whose figures the gate reads.

    It overrides the `bench` section's depth (queries, encodings, HTTP requests) so the whole
    stage stays near 90 s on the cpu profile; `uniret bench` keeps the full report.
    """

    max_queries: int = 100
    warmup_queries: int = 50
    jvm_warmup_queries: int = 5000  # as BenchConfig's: the gate's latency ratio reads a compiled BM25
    encode_queries: int = 50  # batch-1 query encodings with the serving (ONNX) encoder; no torch
    sections: list[str] = field(default_factory=lambda: ["modes", "encoders", "sizes", "http"])
    http: HttpBenchConfig  # params.yaml bench.stage.http: shorter than bench.http
    # rounds of the served mode timed beside production's bundle, query by query (the gate's
    # latency-vs-production rule; 0: not timed)
    production_rounds: int = 3

    def validate(self) -> None:
        known = {"modes", "encoders", "sizes", "top_n", "http", "growth"}
        if unknown := sorted(set(self.sections) - known):
            raise ValueError(f"sections: unknown {unknown}; known: {sorted(known)}")
        if self.max_queries <= 0 or self.encode_queries <= 0 or min(self.warmup_queries, self.jvm_warmup_queries,
                                                                     self.production_rounds) < 0:
            raise ValueError("max_queries and encode_queries must be positive, warmup_queries, jvm_warmup_queries and "
                             "production_rounds >= 0")


@dataclass(kw_only=True)
class BenchConfig:
    """The `bench` section: which queries, how many repetitions, which curves."""

    # queries (and qrels for nDCG@10) come from this dataset's split; None: data.train_dataset, the
    # data the bundle was built for (uniret.bench.runner.bench_config resolves it)
    dataset: str | None = None
    split: str = "test"
    max_queries: int | None = None  # None: every query of the split
    warmup_queries: int = 100  # run and discarded before each timed series (JIT, caches, lazy opens)
    # BM25 searches run and discarded once before the first timed mode: the JVM compiles Lucene's search and
    # analyzer paths over its first ~4,000 calls, which every mode calling Lucene shares (why: E100)
    jvm_warmup_queries: int = 5000
    modes: list[str] = field(default_factory=lambda: ["bm25", "dense", "lexical", "uni", "hybrid", "hybrid_bm25", "rrf",
                                                      "dense_static", "lexical_static", "dense_feedback",
                                                      "hybrid_fast"])
    k: int = 10  # depth of the timed searches
    eval_k: int = 10  # nDCG cut-off reported next to speed
    encode_queries: int = 200  # batch-1 query encodings timed per encoder (torch, ONNX)
    encode_docs: int = 256  # corpus documents encoded per encoder for the docs/s figure
    top_n: list[int | None] = field(default_factory=lambda: [4, 8, 16, 32, 64, 128, None])  # None: all terms
    threads: int = 2  # Lucene search threads, onnxruntime intra-op threads and torch threads
    http: HttpBenchConfig
    out_dir: str = "results/bench"  # relative to the params file's folder
    stage: BenchStageConfig  # the DAG stage's shorter run
    growth: GrowthConfig = field(default_factory=GrowthConfig)
    targets: BenchTargets = field(default_factory=BenchTargets)

    def validate(self) -> None:
        if self.max_queries is not None and self.max_queries <= 0:
            raise ValueError(f"max_queries must be positive or null, got {self.max_queries}")
        for name in ("k", "eval_k", "encode_queries", "encode_docs", "threads"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.warmup_queries < 0 or self.jvm_warmup_queries < 0:
            raise ValueError(f"warmup_queries and jvm_warmup_queries must be >= 0, got {self.warmup_queries} and "
                             f"{self.jvm_warmup_queries}")
        if not self.modes:
            raise ValueError("modes must name at least one retrieval mode")
        if any(n is not None and n <= 0 for n in self.top_n):
            raise ValueError(f"top_n entries must be positive or null (all terms), got {self.top_n}")
