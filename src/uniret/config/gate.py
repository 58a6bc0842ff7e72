"""Config of the evaluation gate: what a candidate must satisfy before it may be promoted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class NewestTrafficConfig:
    """The "newest traffic" check: candidate vs production on the feedback stage's held-out day, per
    query, under the paired non-inferiority rule (gate.regression_confidence, regression_resamples)."""

    enabled: bool = True  # false: the check is listed as skipped (off), never run
    # the held-out day's qrels the metric is on; ips: the counterfactual click rate (uniret.clicks.judgments)
    judgments: Literal["click_model", "coec", "ips"] = "click_model"
    # graded nDCG with gain = the judgment, on the condensed list or the full one (uniret.evaluation.graded);
    # the full list blocked every candidate that learned in the loop (E96)
    metric: Literal["ndcg@10", "condensed_ndcg@10"] = "condensed_ndcg@10"
    margin: float = 0.01  # non-inferiority margin (absolute) on the held-out day's mean

    def validate(self) -> None:
        if self.margin < 0:
            raise ValueError(f"margin must be >= 0, got {self.margin}")


@dataclass
class GateConfig:
    """Thresholds of the gate (see uniret.registry.gate for how each is checked).

    Metric values are absolute (e.g. nDCG@10 in [0, 1]); a `None` budget turns its check into an
    explicit "skipped: no budget configured" entry of the decision, never a silent pass. Latency and
    index-size budgets are read from the bench stage's figures of the candidate (artifacts/bench);
    a configured budget those figures cannot answer blocks the candidate.
    """

    # a system key of evaluate's metrics.json ("uni", "clear", "unifier/hybrid", ...); None: the bundle
    # mode the active recipe serves (serve_mode in recipes/<recipe>.yaml), see resolve_gate_config
    candidate_system: str | None = None
    baseline_system: str = "bm25"
    metric: str = "ndcg@10"
    macro_key: Literal["macro", "zero_shot_macro"] = "macro"
    min_score: float = 0.1  # absolute minimum of `metric` on every dataset...
    min_score_per_dataset: dict[str, float] = field(default_factory=lambda: {"scifact": 0.5, "nfcorpus": 0.25})  # ...unless named here
    # candidate vs production: `paired` blocks when the candidate is worse, with confidence, by more
    # than a margin (per dataset and pooled; uniret.evaluation.noninferiority), `threshold` when its
    # point score drops by more than max_regression on any dataset (also the fallback when
    # per-query scores of either side are missing)
    regression_rule: Literal["paired", "threshold"] = "paired"
    max_regression: float = 0.01  # the threshold rule's largest drop on any dataset (absolute)
    regression_confidence: float = 0.95  # one-sided confidence of the paired rule's upper bound
    regression_margin: float = 0.005  # per-dataset non-inferiority margin (absolute)...
    regression_margins: dict[str, float] = field(default_factory=dict)  # ...unless named here
    regression_pool: Literal["macro", "zero_shot_macro"] = "zero_shot_macro"  # datasets the pooled rule covers
    pooled_margin: float = 0.005  # the pooled (macro) rule's margin
    regression_resamples: int = 10000  # bootstrap resamples per paired test (seeded)
    # production's scores to compare with: those stored at its promotion when they were measured on
    # this run's data (same dataset files, split, slice), else re-scored on it (auto); always
    # re-scored; or always the stored ones, whatever data they came from (never)
    rescore_production: Literal["auto", "always", "never"] = "auto"
    bm25_margin: float = 0.0  # candidate macro must reach baseline macro + margin
    min_active_terms_doc: float | None = 1.0  # below: the sparse head collapsed (all-zero vectors)
    max_active_terms_doc: float | None = 1000.0  # above: the sparse index is not sparse
    max_latency_p95_ms: float | None = 500.0
    # the served mode's p50 over BM25's p50 in the same bench run, query encoding included
    max_latency_ratio_bm25: float | None = 8.0  # why: E100
    # the served mode's p50 and p95 over production's bundle's, timed query by query in the bench
    # stage (bench.stage.production_rounds); None: off; a cold start has nothing to compare with.
    # Two timings of one bundle land within 1.004-1.025 of each other (why these margins: E65)
    max_latency_p50_vs_production: float | None = 1.25
    max_latency_p95_vs_production: float | None = 1.5
    latency_mode: str | None = None  # bench mode to budget; None: the candidate's mode ("a/b" -> "b")
    max_bytes_per_doc_dense: float | None = 4096.0
    max_bytes_per_doc_sparse: float | None = 16384.0
    # candidate vs production on the newest day of logged traffic (docs/gate-registry.md)
    newest_traffic: NewestTrafficConfig = field(default_factory=NewestTrafficConfig)

    def margin(self, dataset: str) -> float:
        """The paired rule's margin on `dataset`."""
        return self.regression_margins.get(dataset, self.regression_margin)

    def validate(self) -> None:
        if self.max_regression < 0:
            raise ValueError(f"max_regression must be >= 0, got {self.max_regression}")
        if not 0.5 < self.regression_confidence < 1.0:
            raise ValueError(f"regression_confidence must be in (0.5, 1), got {self.regression_confidence}")
        margins = {"regression_margin": self.regression_margin, "pooled_margin": self.pooled_margin,
                   **{f"regression_margins.{k}": v for k, v in self.regression_margins.items()}}
        for name, value in margins.items():
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        if self.regression_resamples < 100:
            raise ValueError(f"regression_resamples must be >= 100, got {self.regression_resamples}")
        for name in ("max_latency_ratio_bm25", "max_latency_p50_vs_production", "max_latency_p95_vs_production"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive or null, got {getattr(self, name)}")
        lo, hi = self.min_active_terms_doc, self.max_active_terms_doc
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"min_active_terms_doc ({lo}) > max_active_terms_doc ({hi})")
