"""Team-draft interleaving (Radlinski, Kurup and Joachims, CIKM 2008).

Two teams pick in turn, like captains choosing players: the team with fewer picks goes next, a coin
decides when they have as many; each picks its own ranking's best document not yet in the list. The
shown list is the picks in order, each labelled with the team that picked it, so a click credits the
team that put the document there. A document both rankings hold is shown once. When one ranking
runs out before `k`, the other keeps picking (the original stops there; serving must still answer k).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

PRODUCTION = "p"
CANDIDATE = "c"


@dataclass(frozen=True)
class Interleaved:
    """The list shown (doc ids, best first) and the team of each position (PRODUCTION or CANDIDATE)."""

    docs: tuple[str, ...]
    teams: tuple[str, ...]

    @property
    def team_string(self) -> str:
        """The teams as one string, position by position (what the UBI query record keeps): e.g. "pccp"."""
        return "".join(self.teams)


def team_draft(production: Sequence[str], candidate: Sequence[str], k: int, rng: random.Random) -> Interleaved:
    """Interleave two rankings (doc ids, best first) into at most `k` documents, no document twice."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    rankings = {PRODUCTION: list(production), CANDIDATE: list(candidate)}
    cursor = {PRODUCTION: 0, CANDIDATE: 0}
    picks = {PRODUCTION: 0, CANDIDATE: 0}
    shown: set[str] = set()
    docs: list[str] = []
    teams: list[str] = []

    def next_doc(team: str) -> str | None:
        ranking = rankings[team]
        while cursor[team] < len(ranking) and ranking[cursor[team]] in shown:
            cursor[team] += 1
        return ranking[cursor[team]] if cursor[team] < len(ranking) else None

    while len(docs) < k:
        available = {team: next_doc(team) for team in rankings}
        if available[PRODUCTION] is None and available[CANDIDATE] is None:
            break
        if available[PRODUCTION] is None:
            team = CANDIDATE
        elif available[CANDIDATE] is None:
            team = PRODUCTION
        elif picks[PRODUCTION] != picks[CANDIDATE]:
            team = PRODUCTION if picks[PRODUCTION] < picks[CANDIDATE] else CANDIDATE
        else:
            team = PRODUCTION if rng.random() < 0.5 else CANDIDATE
        doc = available[team]
        shown.add(doc)
        docs.append(doc)
        teams.append(team)
        picks[team] += 1
    return Interleaved(tuple(docs), tuple(teams))
