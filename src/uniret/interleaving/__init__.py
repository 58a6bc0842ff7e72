"""Online comparison of two rankers on live traffic: team-draft interleaving, click credit, and the
canary's decision rule (docs/gate-registry.md, "Canary")."""

from uniret.interleaving.credit import Outcome, credit
from uniret.interleaving.decision import Preference, Verdict, decide, preference
from uniret.interleaving.team_draft import CANDIDATE, PRODUCTION, Interleaved, team_draft

__all__ = ["CANDIDATE", "PRODUCTION", "Interleaved", "Outcome", "Preference", "Verdict", "credit", "decide",
           "preference", "team_draft"]
