"""One check of the promotion gate's decision (uniret.registry.gate, uniret.registry.traffic_check)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["pass", "fail", "skipped"]


@dataclass
class Check:
    """One rule applied to one value; `passed` is None when the check was skipped."""

    name: str
    dataset: str | None
    value: float | None
    threshold: float | None
    status: Status
    reason: str
    interval: tuple[float, float] | None = None  # the paired rule's interval of candidate - production
    rule: str | None = None  # which rule decided a regression check: paired, pooled or threshold

    @property
    def passed(self) -> bool | None:
        return None if self.status == "skipped" else self.status == "pass"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}
