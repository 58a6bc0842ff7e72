"""Config of `uniret nightly`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class NightlyConfig:
    """Commands a nightly run executes (in the params file's folder) around the DAG."""

    refresh_commands: list[str] = field(default_factory=list)  # e.g. ["dvc pull"]; run first
    repro_command: str = "dvc repro"  # builds artifacts up to evaluate; nightly runs the gate after it
    # false: never promote, as if the registry were paused (`uniret registry pause`, which needs no
    # params edit): every stage, the gate and the report run, and the nightly exits 4 (paused)
    promote: bool = True
    report: bool = True  # run the report stage after the decision
    # a night that promotes no new model re-indexes today's corpus with production's own model and
    # promotes that bundle after integrity, floor and latency checks (uniret.stages.corpus_refresh):
    # "blocked_or_paused" also while `uniret registry pause` holds (a pause freezes models, not
    # documents), "blocked" only on blocked nights (a pause freezes everything), "off" never;
    # nightly.promote: false turns it off too
    refresh_corpus: Literal["off", "blocked", "blocked_or_paused"] = "blocked_or_paused"
    lock_file: str = ".cache/nightly.lock"  # relative to the params file's folder

    def validate(self) -> None:
        if not self.repro_command.strip():
            raise ValueError("repro_command must not be empty")
        if not self.lock_file:
            raise ValueError("lock_file must be a non-empty path")
