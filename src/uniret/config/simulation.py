"""The `simulate` section: simulated traffic for the learning loop (`uniret simulate`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SimulateConfig:
    """What `uniret simulate` sends and how its simulated users click (docs/learning-loop.md)."""

    dataset: str = "nfcorpus"  # the labelled folder (under the data root) whose queries are the traffic
    split: str = "train"  # its qrels split: queries and click grades; never the test split
    sessions: int = 1000  # searches (one session each) per run
    seed: int = 7
    zipf_exponent: float = 1.0  # query r of a seeded order is drawn with probability ~ 1 / r^exponent
    depth: int = 10  # results asked for and shown (one impression each)
    clients: int = 200  # distinct simulated client ids
    mode: str | None = None  # retrieval mode asked for; None: the server's default
    eta: float = 1.0  # position bias severity: examination = ULTRA's base^eta
    click_noise: float = 0.1  # e-: click probability of an examined non-relevant result
    click_max: float = 1.0  # e+: click probability of an examined result of the top grade
    max_grade: int | None = None  # ymax; None: the split's highest grade

    def validate(self) -> None:
        for name in ("sessions", "depth", "clients"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.split == "test":
            raise ValueError("split: the test split is never traffic (it scores the loop)")
        if not 0.0 <= self.click_noise <= self.click_max <= 1.0:
            raise ValueError(f"need 0 <= click_noise <= click_max <= 1, got {self.click_noise}, {self.click_max}")
        if self.zipf_exponent < 0 or self.eta < 0:
            raise ValueError("zipf_exponent and eta must be non-negative")
