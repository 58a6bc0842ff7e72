"""Config dataclasses of the spine stages (data, validate, bm25, evaluate)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from uniret.utils.names import PLAIN_RULE, is_plain_name
from uniret.utils.text import excerpt

log = logging.getLogger("uniret.config")
_WARNED: set[str] = set()  # a settings warning is logged once per process, not once per section load


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
class DevSplitConfig:
    """A dev split carved from the train dataset's train qrels, held out of every training stage.

    Fusion weights (and any other choice) are learned on it, never on a test split. The carve is
    a seeded sample of the judged train query ids, so it is the same in every stage and run.
    """

    fraction: float = 0.2  # share of the judged train queries held out (0 disables the carve)
    seed: int = 29
    # eval datasets whose own `split` qrels also tune the fusion (e.g. NFCorpus's dev split): weights
    # chosen on the train domain alone need not suit other collections. Names outside
    # data.eval_datasets are ignored (their corpora are not validated or indexed)
    datasets: list[str] = field(default_factory=lambda: ["nfcorpus"])
    split: str = "dev"

    def validate(self) -> None:
        if not 0.0 <= self.fraction < 1.0:
            raise ValueError(f"fraction must be in [0, 1), got {self.fraction}")


@dataclass
class DataConfig:
    """Which datasets the DAG reads, and where from."""

    root: str | None = "../shared/data"  # --data and $UNIRET_DATA win; None: ../shared/data found by search
    train_dataset: str = "scifact"
    train_split: str = "train"
    eval_datasets: list[str] = field(default_factory=lambda: ["scifact", "nfcorpus", "cranfield", "medline", "npl"])
    eval_split: str = "test"
    slice: SliceConfig = field(default_factory=SliceConfig)
    dev: DevSplitConfig = field(default_factory=DevSplitConfig)

    def validate(self) -> None:
        # each name becomes a folder under the data root and under artifacts/validate/datasets:
        # a path here (absolute, `..`) would make validate write its snapshot onto its own input
        names = [("train_dataset", self.train_dataset)] + [
            (f"eval_datasets[{i}]", n) for i, n in enumerate(self.eval_datasets)
        ] + [(f"dev.datasets[{i}]", n) for i, n in enumerate(self.dev.datasets)]
        for key, name in names:
            if not is_plain_name(name):
                raise ValueError(f"{key}: dataset name {excerpt(name)} must be {PLAIN_RULE}")
        for key, split in (("train_split", self.train_split), ("eval_split", self.eval_split),
                           ("dev.split", self.dev.split)):
            if not is_plain_name(split):
                raise ValueError(f"{key}: split {excerpt(split)} must be {PLAIN_RULE}")
        if ignored := self.ignored_dev_datasets():
            # params.yaml names a BEIR collection here; on other data it tunes nothing, and no stage fails
            warning = (f"data.dev.datasets: {', '.join(ignored)} not in data.eval_datasets: ignored (the "
                       f"fusion is tuned on the {self.train_dataset} dev carve alone)")
            if warning not in _WARNED:
                _WARNED.add(warning)
                log.warning(warning)

    def ignored_dev_datasets(self) -> list[str]:
        """Names of dev.datasets the stages leave out: those not evaluated (their corpora are not indexed)."""
        return [n for n in self.dev.datasets if n not in self.eval_datasets]


@dataclass
class DriftConfig:
    """Thresholds for drift against the previously validated snapshot of the same dataset."""

    max_row_count_change: float = 0.2  # relative change in corpus/queries/qrels rows
    max_mean_length_change: float = 0.25  # relative change in mean text length (chars)
    max_length_ks: float = 0.2  # Kolmogorov-Smirnov distance between text-length distributions
    sketch_points: int = 200  # quantiles kept per length distribution to compare the next snapshot with

    def validate(self) -> None:
        if self.sketch_points < 2:
            raise ValueError(f"sketch_points must be at least 2, got {self.sketch_points}")


@dataclass
class ValidateConfig:
    """Expectations of the validate stage."""

    min_text_chars: int = 1
    max_doc_chars: int = 100_000
    max_query_chars: int = 2_000
    min_score: int = 0  # 0: judged not relevant (BEIR's convention; hand-labelled sets use it), counts as such
    max_score: int = 4
    drift: DriftConfig = field(default_factory=DriftConfig)
    fail_on_drift: bool = True
    max_examples: int = 5  # offending ids/lines quoted per failed expectation

    def validate(self) -> None:
        if self.min_score > self.max_score:
            raise ValueError(f"min_score ({self.min_score}) is above max_score ({self.max_score})")
        if self.max_score < 1:
            raise ValueError(f"max_score must be >= 1 (relevance is a score >= 1), got {self.max_score}")
        if self.min_text_chars < 0 or self.max_examples < 1:
            raise ValueError("min_text_chars must be >= 0 and max_examples >= 1")


@dataclass
class Rm3Config:
    """RM3 pseudo-relevance feedback on BM25 (Anserini's Rm3Reranker, as SimpleSearcher.set_rm3):
    the query is expanded with `fb_terms` terms of the relevance model of its top `fb_docs` hits,
    mixed with the original query at `original_query_weight`, and searched again. The
    `bm25_rm3` retrieval mode uses it; it reads the documents' term vectors (stored by the bm25
    stage's index)."""

    fb_terms: int = 10
    fb_docs: int = 10
    original_query_weight: float = 0.5

    def validate(self) -> None:
        if self.fb_terms <= 0 or self.fb_docs <= 0:
            raise ValueError(f"fb_terms and fb_docs must be positive, got {self.fb_terms}, {self.fb_docs}")
        if not 0.0 <= self.original_query_weight <= 1.0:
            raise ValueError(f"original_query_weight must be in [0, 1], got {self.original_query_weight}")


@dataclass
class Bm25Config:
    """Lucene BM25 (pyserini) and the negatives sampled from its ranking."""

    k1: float = 0.9
    b: float = 0.4
    stemmer: Literal["porter", "krovetz", "none"] = "porter"
    keep_stopwords: bool = False  # False: Lucene's English stopword list is removed
    top_n: int = 1000  # retrieval depth for runs and eval
    negatives_depth: int = 100  # negatives are sampled from this BM25 top-N
    negatives_per_query: int = 30
    threads: int = 2
    seed: int = 17
    index_batch_size: int = 1000  # documents handed to Lucene per call
    search_batch_size: int = 500  # queries per batch_search call (progress granularity)
    rm3: Rm3Config = field(default_factory=Rm3Config)  # the bm25_rm3 mode's feedback

    def validate(self) -> None:
        if self.k1 < 0:
            raise ValueError(f"k1 must be >= 0, got {self.k1}")
        if not 0.0 <= self.b <= 1.0:
            raise ValueError(f"b must be in [0, 1], got {self.b}")
        for name in ("top_n", "negatives_depth", "threads", "index_batch_size", "search_batch_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.negatives_per_query < 0:
            raise ValueError(f"negatives_per_query must be >= 0, got {self.negatives_per_query}")
        if self.negatives_depth > self.top_n:
            raise ValueError(f"negatives_depth ({self.negatives_depth}) cannot exceed top_n ({self.top_n})")


@dataclass
class EvaluateConfig:
    """BEIR-style evaluation. Metric names: ndcg@k, mrr@k, recall@k, precision@k, map, map@k."""

    metrics: list[str] = field(default_factory=lambda: ["ndcg@10", "mrr@10", "recall@100", "recall@1000", "map"])
    ignore_identical_ids: bool = True  # drop hits whose doc id is the query id (BEIR)
    # reference-score files (relative to params.yaml's folder), checked on unsliced data only
    expected_scores: list[str] = field(
        default_factory=lambda: ["expected/bm25.yaml", "expected/hybrid.yaml",
                                "expected/hybrid_bm25.yaml"])
    strict_expected: bool = False  # true: a reference-score miss fails the stage; false: logged
    # run sources to score (names in uniret.evaluation.sources.RUN_SOURCES); null = all registered
    sources: list[str] | None = None
    # the train dataset's test queries are also scored as seen / novel (uniret.data.overlap): seen =
    # a judged document shared with a train query, or a train query at word-set Jaccard >= this
    overlap_jaccard: float = 0.5

    def validate(self) -> None:
        from uniret.core.metric_names import parse_metric

        if not 0.0 < self.overlap_jaccard <= 1.0:
            raise ValueError(f"overlap_jaccard must be in (0, 1], got {self.overlap_jaccard}")

        if not self.metrics:
            raise ValueError("metrics must name at least one metric")
        for i, name in enumerate(self.metrics):
            try:
                parse_metric(name)
            except ValueError as exc:
                raise ValueError(f"metrics[{i}]: {exc}") from exc
        if len(set(self.metrics)) != len(self.metrics):
            raise ValueError(f"metrics: duplicate names in {self.metrics}")
