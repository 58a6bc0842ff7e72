"""Which closed UBI spans the feedback stage reads: days t-N .. t-1 for training, the newest closed day t held out.

A span is one UTC day of logs; it is closed once that day is over, so the day being written is never
read. The held-out day is never in the training window (a split that ignores the timeline leaks the future).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta


@dataclass(frozen=True)
class Window:
    """The spans one run reads: `train` (oldest first) and the held-out `heldout` day."""

    train: tuple[str, ...]
    heldout: str | None

    @property
    def days(self) -> tuple[str, ...]:
        return (*self.train, *((self.heldout,) if self.heldout else ()))

    def to_json(self) -> dict[str, object]:
        return {"train": list(self.train), "heldout": self.heldout}


def closed(days: list[str], today: date) -> list[str]:
    """The days of `days` (YYYY-MM-DD) that are over by `today` (UTC), oldest first."""
    return sorted(d for d in set(days) if date.fromisoformat(d) < today)


def choose_window(closed_days: list[str], window_days: int) -> Window:
    """Hold out the newest closed day t; train on the closed days among t-window_days .. t-1.

    Days with no logs inside that range are simply absent (a quiet day is no error).
    """
    if not closed_days:
        return Window(train=(), heldout=None)
    newest = date.fromisoformat(max(closed_days))
    first = newest - timedelta(days=window_days)
    train = tuple(d for d in sorted(closed_days) if first <= date.fromisoformat(d) < newest)
    return Window(train=train, heldout=newest.isoformat())

