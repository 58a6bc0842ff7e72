"""Config dataclasses of the spine stages (data, validate, bm25, evaluate)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SliceConfig:
    """Deterministic sub-sampling of a dataset (the `tiny` profile uses it to stay fast)."""

    max_queries: int | None = None  # per split; None keeps all
    max_docs: int | None = None  # judged docs of kept queries are always kept
    seed: int = 13

    def validate(self) -> None:
        for name in ("max_queries", "max_docs"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise ValueError(f"{name} must be positive or null, got {v}")


@dataclass
class DataConfig:
    """Which datasets the DAG reads, and where from."""

    root: str | None = None  # None: $UNIRET_DATA, then ../shared/data
    train_dataset: str = "scifact"
    train_split: str = "train"
    eval_datasets: list[str] = field(default_factory=lambda: ["scifact", "nfcorpus", "cranfield", "medline", "npl"])
    eval_split: str = "test"
    slice: SliceConfig = field(default_factory=SliceConfig)


@dataclass
class DriftConfig:
    """Thresholds for drift against the previously validated snapshot of the same dataset."""

    max_row_count_change: float = 0.2  # relative change in corpus/queries/qrels rows
    max_mean_length_change: float = 0.25  # relative change in mean text length (chars)
    max_length_ks: float = 0.2  # Kolmogorov-Smirnov distance between text-length distributions


@dataclass
class ValidateConfig:
    """Expectations of the validate stage."""

    min_text_chars: int = 1
    max_doc_chars: int = 100_000
    max_query_chars: int = 2_000
    min_score: int = 0
    max_score: int = 4
    drift: DriftConfig = field(default_factory=DriftConfig)
    fail_on_drift: bool = True


@dataclass
class Bm25Config:
    """Lucene BM25 (pyserini) and the negatives sampled from its ranking."""

    k1: float = 0.9
    b: float = 0.4
    stemmer: str = "porter"
    top_n: int = 1000  # retrieval depth for runs and eval
    negatives_depth: int = 100  # negatives are sampled from this BM25 top-N
    negatives_per_query: int = 30
    threads: int = 2
    seed: int = 17


@dataclass
class EvaluateConfig:
    """BEIR-style evaluation."""

    metrics: list[str] = field(
        default_factory=lambda: ["ndcg_cut_10", "recip_rank_10", "recall_100", "recall_1000", "map"]
    )
    ignore_identical_ids: bool = True
    k_values: list[int] = field(default_factory=lambda: [10, 100, 1000])
    expected_scores: str | None = "benchmarks/expected/bm25.yaml"
