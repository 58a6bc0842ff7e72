"""The tracker interface the training loop and the stages log to, and its no-op variant."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Tracker(Protocol):
    """Experiment tracker: `log(step, values)` during a run, `finish()` once at the end."""

    def log(self, step: int, values: Mapping[str, Any]) -> None: ...

    def finish(self) -> None: ...


class NullTracker:
    """A tracker that records nothing (W&B disabled)."""

    enabled = False
    run_dir = None

    def log(self, step: int, values: Mapping[str, Any]) -> None:
        """Accept and drop `values`."""

    def summary(self, values: Mapping[str, Any]) -> None:
        """Accept and drop final `values`."""

    def finish(self) -> None:
        """Nothing to close."""

    def __enter__(self) -> NullTracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()
