"""Config of the HTTP serving process (`uniret serve`) and of the benchmarks (`uniret bench`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ServeConfig:
    """The `serve` section: request bounds, concurrency and the admin token of `/admin/reload`."""

    host: str = "127.0.0.1"  # loopback by default: exposing the server is a deliberate choice
    port: int = 8000
    max_k: int = 100  # largest k a /search request may ask for
    default_k: int = 10
    max_query_chars: int = 1000
    max_body_bytes: int = 16_384  # bodies above this are refused with 413 before JSON parsing
    # None: the mode the bundle's recipe serves (its manifest's serve_mode: uni, clear, dense),
    # else uni; a mode the bundle does not offer falls back to the first offered (logged)
    default_mode: str | None = None
    workers: int = 1  # uvicorn processes; each loads the bundle and watches the pointer
    threads: int = 4  # search threads per process (requests beyond this wait in a queue)
    onnx_threads: int | None = None  # intra-op threads of the ONNX query encoder; None: onnxruntime's choice
    admin_token: str | None = None  # the env var named by registry.token_env takes precedence
    probe_query: str = "protein folding in cells"  # run on every mode before a bundle goes live
    watch_interval_s: float = 0.0  # > 0: poll production.json and reload when its version changes
    log_level: str = "warning"  # uvicorn's own log level

    def validate(self) -> None:
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be in 1..65535, got {self.port}")
        for name in ("max_k", "default_k", "max_query_chars", "max_body_bytes", "workers", "threads"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.default_k > self.max_k:
            raise ValueError(f"default_k ({self.default_k}) cannot exceed max_k ({self.max_k})")
        if self.onnx_threads is not None and self.onnx_threads <= 0:
            raise ValueError(f"onnx_threads must be positive or null, got {self.onnx_threads}")
        if not self.probe_query.strip():
            raise ValueError("probe_query must be a non-empty query")
        if self.watch_interval_s < 0:
            raise ValueError(f"watch_interval_s must be >= 0, got {self.watch_interval_s}")
        if self.admin_token is not None and not self.admin_token:
            raise ValueError("admin_token must be null or a non-empty string")


@dataclass
class HttpBenchConfig:
    """Serving latency over HTTP: a real uvicorn on 127.0.0.1, bounded in requests and time."""

    concurrency: list[int] = field(default_factory=lambda: [1, 16])
    requests_per_level: int = 400  # total requests per concurrency level (across clients)
    max_seconds: float = 60.0  # per level; the run stops early when reached
    mode: str = "uni"
    k: int = 10
    startup_timeout_s: float = 180.0  # the server loads the bundle (JVM, ONNX) before /readyz is 200

    def validate(self) -> None:
        if not self.concurrency or any(c <= 0 for c in self.concurrency):
            raise ValueError(f"concurrency must list positive client counts, got {self.concurrency}")
        if self.requests_per_level <= 0 or self.max_seconds <= 0 or self.startup_timeout_s <= 0:
            raise ValueError("requests_per_level, max_seconds and startup_timeout_s must be positive")


@dataclass
class BenchConfig:
    """The `bench` section: which queries, how many repetitions, which curves."""

    dataset: str = "scifact"  # queries (and qrels for nDCG@10) come from this dataset's split
    split: str = "test"
    max_queries: int | None = None  # None: every query of the split
    warmup_queries: int = 5  # run and discarded before each timed series (JIT, caches, lazy opens)
    modes: list[str] = field(default_factory=lambda: ["bm25", "dense", "lexical", "uni", "hybrid", "rrf"])
    k: int = 10  # depth of the timed searches
    eval_k: int = 10  # nDCG cut-off reported next to speed
    encode_queries: int = 200  # batch-1 query encodings timed per encoder (torch, ONNX)
    encode_docs: int = 256  # corpus documents encoded per encoder for the docs/s figure
    encode_batch_size: int = 32
    top_n: list[int | None] = field(default_factory=lambda: [4, 8, 16, 32, 64, 128, None])  # None: all terms
    threads: int = 2  # Lucene search threads, onnxruntime intra-op threads and torch threads
    http: HttpBenchConfig = field(default_factory=HttpBenchConfig)
    out_dir: str = "benchmarks/results"  # relative to the params file's folder

    def validate(self) -> None:
        if self.max_queries is not None and self.max_queries <= 0:
            raise ValueError(f"max_queries must be positive or null, got {self.max_queries}")
        for name in ("k", "eval_k", "encode_queries", "encode_docs", "encode_batch_size", "threads"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.warmup_queries < 0:
            raise ValueError(f"warmup_queries must be >= 0, got {self.warmup_queries}")
        if not self.modes:
            raise ValueError("modes must name at least one retrieval mode")
        if any(n is not None and n <= 0 for n in self.top_n):
            raise ValueError(f"top_n entries must be positive or null (all terms), got {self.top_n}")
