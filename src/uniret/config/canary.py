"""The `canary` section: an interleaving canary between the offline gate and full promotion (issue 59)."""

from __future__ import annotations

from dataclasses import dataclass

RULES = ("non_inferior", "superior")  # uniret.interleaving.decision says what each means


@dataclass
class CanaryConfig:
    """How a candidate that passed the gate is tried on live traffic (docs/gate-registry.md, "Canary")."""

    # false: gate -> promote (as before); true: gate -> canary -> promote (the nightly starts a canary
    # instead of promoting; `uniret canary decide` promotes or rolls back)
    enabled: bool = False
    share: float = 0.5  # share of /search requests answered with the interleaved list while a canary runs
    min_impressions: int = 4500  # interleaved impressions with a click before deciding
    max_hours: float = 72.0  # past this without enough impressions: rolled back (production stays)
    rule: str = "non_inferior"  # non_inferior: promote unless significantly worse; superior: only if better
    alpha: float = 0.025  # one-sided level of the rule's interval
    # seeds serving's interleaving draws (which searches, team draft's coin), every process alike; null:
    # from the OS. Simulations set it so a rerun interleaves the same searches (as feedback.randpair_seed)
    seed: int | None = None

    def validate(self) -> None:
        if not 0.0 < self.share <= 1.0:
            raise ValueError(f"share must be in (0, 1], got {self.share}")
        if self.min_impressions < 1:
            raise ValueError(f"min_impressions must be at least 1, got {self.min_impressions}")
        if self.max_hours <= 0:
            raise ValueError(f"max_hours must be positive, got {self.max_hours}")
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if not 0.0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 0.5), got {self.alpha}")
