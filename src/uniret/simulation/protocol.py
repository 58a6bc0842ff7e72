"""The click protocol of unbiased learning to rank (ULTRA's click_models.py): position-based examination
and graded click noise.

examination at rank r (1-based) = base[r]^eta, base = [0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10,
0.08, 0.06] (ranks past 10 take the last value); click probability of an examined document of grade y
= e- + (e+ - e-) (2^y - 1) / (2^ymax - 1).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

ULTRA_EXAMINATION = (0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06)


@dataclass(frozen=True)
class ClickProtocol:
    """A position-based click model with graded click noise."""

    eta: float = 1.0  # severity of position bias: examination = base^eta
    click_noise: float = 0.1  # e-: click probability of an examined non-relevant document
    click_max: float = 1.0  # e+: click probability of an examined document of the top grade
    max_grade: int = 2  # ymax: the top relevance grade of the judged folder

    def examination(self, rank: int) -> float:
        """P(the user examines the result at 1-based `rank`)."""
        base = ULTRA_EXAMINATION[min(rank, len(ULTRA_EXAMINATION)) - 1]
        return base ** self.eta

    def click_probability(self, grade: int) -> float:
        """P(click | examined, relevance grade `grade`; grades above max_grade count as max_grade)."""
        y = max(0, min(grade, self.max_grade))
        return self.click_noise + (self.click_max - self.click_noise) * (2 ** y - 1) / (2 ** self.max_grade - 1)

    def clicks(self, grades: list[int], rng: random.Random) -> list[int]:
        """The 1-based ranks clicked in one session over results of these `grades` (best first)."""
        return [rank for rank, grade in enumerate(grades, 1)
                if rng.random() < self.examination(rank) and rng.random() < self.click_probability(grade)]

    def to_json(self) -> dict[str, object]:
        return {"model": "position-based (ULTRA click_models.py)", "examination_base": list(ULTRA_EXAMINATION),
                "eta": self.eta, "click_noise": self.click_noise, "click_max": self.click_max,
                "max_grade": self.max_grade}
