"""The `feedback` section: serving logs in the UBI shape and the feedback stage that learns from them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FeedbackConfig:
    """Where serving logs go and how the feedback stage reads them (docs/learning-loop.md)."""

    # --- serving logs (uniret.ubi) ---
    log_dir: str | None = None  # UBI spans: <log_dir>/ubi_queries|ubi_events/<YYYY-MM-DD>/; None: no logging
    retention_days: int = 30  # spans older than this many days are deleted
    queue_capacity: int = 10000  # records waiting for the writer thread; beyond: dropped and counted
    max_events_per_batch: int = 50  # events in one POST /events; more: 413
    events_per_s: float = 50.0  # per-client token bucket on POST /events (refill rate); over: 429
    events_burst: int = 200  # per-client bucket size: events a client may send at once
    max_clock_skew_s: float = 300.0  # an event timestamp further in the future is refused (422)
    recent_queries: int = 20000  # query_id -> hits kept in serving memory to check events (0: no check)
    # share of logged answers with two adjacent results swapped (RandPair): swaps identify the examination
    # propensities (uniret.clicks.randpair); 0: never. Costs nDCG on that share (results/loop/)
    randpair_share: float = 0.0
    # seeds those swaps (every serving process alike); null: from the OS. Simulations set it so a rerun logs
    # the same swaps (E96)
    randpair_seed: int | None = None

    # --- the feedback stage (uniret.stages.feedback) ---
    window_days: int = 7  # training spans: the closed days t-N .. t-1 before the held-out day t
    reject_share_max: float = 0.5  # the stage fails when a span has a larger share of rejected records
    # which logged lists intervention harvesting may compare: `day` (any two shown the same UTC day, why: E79),
    # `ranker` (one ranker's RandPair swaps), `all` (biased where a bundle learned from the clicks, E68)
    harvest_within: str = "day"
    # resamples of the query texts for each propensity's 95% interval (0: none); about 20 s at 12,000 sessions (E79)
    propensity_bootstrap: int = 100
    clip: float = 10.0  # largest IPS weight (1 / relative propensity), bounding the variance of rare positions
    depth: int = 10  # positions whose examination propensity is estimated; clicks deeper are not used
    em_iterations: int = 200  # most EM iterations of the position-based click model
    coec_min_impressions: int = 1  # a (query, doc) pair shown fewer times gets no COEC judgment

    def validate(self) -> None:
        for name in ("queue_capacity", "max_events_per_batch", "events_per_s", "events_burst"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_clock_skew_s < 0 or self.recent_queries < 0:
            raise ValueError("max_clock_skew_s and recent_queries must not be negative")
        if self.propensity_bootstrap < 0:
            raise ValueError(f"propensity_bootstrap must not be negative, got {self.propensity_bootstrap}")
        for name in ("retention_days", "window_days", "depth", "em_iterations", "coec_min_impressions"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.randpair_share <= 1.0:
            raise ValueError(f"randpair_share must be in [0, 1], got {self.randpair_share}")
        if not 0.0 <= self.reject_share_max <= 1.0:
            raise ValueError(f"reject_share_max must be in [0, 1], got {self.reject_share_max}")
        if self.harvest_within not in ("day", "ranker", "all"):
            raise ValueError(f"harvest_within must be 'day', 'ranker' or 'all', got {self.harvest_within!r}")
        if self.clip < 1.0:
            raise ValueError(f"clip must be at least 1 (an IPS weight never goes below 1), got {self.clip}")
