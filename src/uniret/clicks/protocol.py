"""The click protocol of unbiased learning to rank (ULTRA_pytorch's `click_models.py`, PositionBiasedModel).

A user examines the result at 1-based rank r with probability base[r]^eta, where base is ULTRA's
[0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]; ranks past the tenth take the tenth's
value (0.06^eta), as ULTRA's `getExamProb` does. An examined result of relevance grade y is clicked
with probability e- + (e+ - e-) (2^y - 1) / (2^ymax - 1); grades below 0 count as 0 and grades above
ymax as ymax (ULTRA clamps the same way). Examination and attraction are independent, so
P(click) = examination(r) x click_probability(y), one Bernoulli draw per shown result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ULTRA_EXAMINATION: tuple[float, ...] = (0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06)


def _grades(grades: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(grades)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        as_float = arr.astype(float)
        if not np.all(np.isfinite(as_float)) or not np.all(as_float == np.round(as_float)):
            raise ValueError(f"relevance grades must be integers, got {arr.ravel()[:5].tolist()}")
        arr = as_float.astype(np.int64)
    return arr.astype(np.int64)


@dataclass(frozen=True)
class ClickProtocol:
    """A position-based click model with graded click noise (the simulators' ground truth)."""

    eta: float = 1.0  # severity of position bias: examination = base^eta (0: no bias)
    click_noise: float = 0.1  # e-: click probability of an examined document of grade 0
    click_max: float = 1.0  # e+: click probability of an examined document of the top grade
    max_grade: int = 2  # ymax: the top relevance grade of the judged collection
    base: tuple[float, ...] = ULTRA_EXAMINATION  # examination at ranks 1..len(base) before the power eta

    def __post_init__(self) -> None:
        if self.eta < 0:
            raise ValueError(f"eta must not be negative, got {self.eta}")
        if not 0.0 <= self.click_noise <= self.click_max <= 1.0:
            raise ValueError(f"need 0 <= click_noise (e-) <= click_max (e+) <= 1, got {self.click_noise}, "
                             f"{self.click_max}")
        if self.max_grade < 1:
            raise ValueError(f"max_grade must be at least 1, got {self.max_grade}")
        if not self.base or not all(0.0 < b <= 1.0 for b in self.base):
            raise ValueError(f"examination base values must be in (0, 1], got {self.base}")

    def examination(self, rank: int) -> float:
        """P(the user examines the result at 1-based `rank`); past the base's last rank, its last value."""
        if rank < 1:
            raise ValueError(f"ranks are 1-based, got {rank}")
        return self.base[min(rank, len(self.base)) - 1] ** self.eta

    def examination_curve(self, depth: int) -> np.ndarray:
        """Examination probabilities at ranks 1..depth (index 0 is rank 1)."""
        return np.array([self.examination(r) for r in range(1, depth + 1)])

    def relative_examination(self, depth: int) -> np.ndarray:
        """examination(r) / examination(1) at ranks 1..depth: what the estimators recover."""
        curve = self.examination_curve(depth)
        return curve / curve[0]

    def click_probability(self, grade: int) -> float:
        """P(click | examined, relevance grade `grade`)."""
        return float(self.click_probabilities([grade])[0])

    def click_probabilities(self, grades: Sequence[int] | np.ndarray) -> np.ndarray:
        """P(click | examined) for an array of grades (any shape)."""
        y = np.clip(_grades(grades), 0, self.max_grade)
        return self.click_noise + (self.click_max - self.click_noise) * (2.0 ** y - 1) / (2.0 ** self.max_grade - 1)

    def click_matrix(self, grades: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Clicks (bool) for a (sessions x depth) matrix of the grades shown, rank 1 in column 0."""
        grades = np.atleast_2d(_grades(grades))
        p = self.examination_curve(grades.shape[1])[None, :] * self.click_probabilities(grades)
        return rng.random(grades.shape) < p

    def sample_clicks(self, grades: Sequence[int], rng: np.random.Generator) -> list[int]:
        """The 1-based ranks clicked in one shown list whose results have these `grades` (rank 1 first)."""
        if len(grades) == 0:
            return []
        return [int(r) + 1 for r in np.flatnonzero(self.click_matrix(np.asarray(grades)[None, :], rng)[0])]

    def to_json(self) -> dict[str, object]:
        return {"model": "position-based (ULTRA click_models.py)", "examination_base": list(self.base),
                "ranks_past_base": "the last base value", "eta": self.eta, "click_noise": self.click_noise,
                "click_max": self.click_max, "max_grade": self.max_grade}
