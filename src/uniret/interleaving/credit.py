"""Crediting the clicks on an interleaved list to its teams."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from uniret.interleaving.team_draft import CANDIDATE, PRODUCTION


@dataclass(frozen=True)
class Outcome:
    """One interleaved impression: clicks on each team's documents, and who won it."""

    query: str  # the query it answered (impressions of one query are one cluster in the interval)
    production_clicks: int
    candidate_clicks: int

    @property
    def clicked(self) -> bool:
        return self.production_clicks + self.candidate_clicks > 0

    @property
    def score(self) -> int:
        """+1 the candidate won (more clicks on its team's documents), -1 production won, 0 a tie."""
        return (self.candidate_clicks > self.production_clicks) - (self.candidate_clicks < self.production_clicks)


def credit(query: str, teams: str | Iterable[str], clicked_ranks: Iterable[int]) -> Outcome:
    """The outcome of one impression: `teams` position by position (rank 1 first), the 1-based ranks clicked.

    A click past the teams' length (not on the interleaved list) is an error: the caller joined the
    wrong record.
    """
    teams = tuple(teams)
    counts = {PRODUCTION: 0, CANDIDATE: 0}
    for rank in set(clicked_ranks):
        if not 1 <= rank <= len(teams):
            raise ValueError(f"click at rank {rank}, but the interleaved list shows {len(teams)} results")
        team = teams[rank - 1]
        if team not in counts:
            raise ValueError(f"unknown team {team!r} at rank {rank} (expected {PRODUCTION!r} or {CANDIDATE!r})")
        counts[team] += 1
    return Outcome(query, counts[PRODUCTION], counts[CANDIDATE])
