"""What the feedback stage derives from validated UBI records: sessions, then pairs and judgments.

A session is one logged query answer (one query_id): the docs it showed by position, which of them
an impression event says were shown to the user, and which were clicked. Training pairs put a
clicked doc above each shown, unclicked doc of the same session; the IPS pair carries the weight
1 / (propensity of the clicked position relative to rank 1), clipped, the naive pair weight 1.
Judgments of the held-out day: COEC (clicks over expected clicks, with the CTR of the pair's best
rank over all that day's traffic) and the click model's relevance.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from uniret.feedback.ingest import CLICK, IMPRESSION


def query_key(text: str) -> str:
    """A stable id for a query text (lower-cased, spaces collapsed): one judged query per distinct text."""
    norm = " ".join(text.lower().split())
    return "q" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:12]


@dataclass
class Session:
    """One query answer as the user met it: positions shown (1-based) and positions clicked."""

    query_id: str
    client_id: str
    query: str
    hits: list[str]
    shown: set[int] = field(default_factory=set)
    clicked: set[int] = field(default_factory=set)

    @property
    def key(self) -> str:
        return query_key(self.query)

    def examined_positions(self, depth: int) -> list[int]:
        """Positions the user saw: the impressions, else (no impression logged) down to the deepest click."""
        seen = self.shown | self.clicked
        if not self.shown:
            seen = set(range(1, max(self.clicked, default=0) + 1))
        return sorted(p for p in seen if p <= min(depth, len(self.hits)))


def build_sessions(queries: Iterable[dict[str, Any]], events: Iterable[dict[str, Any]]) -> list[Session]:
    """Join validated events to their validated queries (events of unknown queries never get here)."""
    by_id = {q["query_id"]: Session(q["query_id"], q["client_id"], q["user_query"], list(q["query_response_hit_ids"]))
             for q in queries}
    for event in events:
        session = by_id.get(event["query_id"])
        if session is None:
            continue  # its query is in a span outside this set (e.g. the held-out day's query, a training event)
        ordinal = event["event_attributes"]["position"]["ordinal"]
        if event["action_name"] == CLICK:
            session.clicked.add(ordinal)
        elif event["action_name"] == IMPRESSION:
            session.shown.add(ordinal)
    return [s for s in by_id.values() if s.shown or s.clicked]


@dataclass
class ClickModel:
    """A position-based click model: P(click) = theta[position] x gamma[query, doc]."""

    theta: dict[int, float]
    gamma: dict[tuple[str, str], float]
    iterations: int

    def relative(self, position: int) -> float:
        """theta[position] / theta[1]: the propensity IPS divides by."""
        return self.theta[position] / self.theta[1] if self.theta.get(1) else 0.0


def fit_pbm(sessions: list[Session], depth: int, iterations: int, tol: float = 1e-6) -> ClickModel:
    """Fit a position-based click model by EM (Chuklin et al.; the E-step of Wang et al., WSDM 2018)."""
    rows = [(p, (s.key, s.hits[p - 1]), p in s.clicked) for s in sessions for p in s.examined_positions(depth)]
    theta = {p: 0.5 for p in range(1, depth + 1)}
    gamma = {pair: 0.5 for _, pair, _ in rows}
    done = 0
    for iteration in range(1, iterations + 1):
        done = iteration
        t_num: dict[int, float] = defaultdict(float)
        t_den: dict[int, float] = defaultdict(float)
        g_num: dict[tuple[str, str], float] = defaultdict(float)
        g_den: dict[tuple[str, str], float] = defaultdict(float)
        for p, pair, click in rows:
            th, ga = theta[p], gamma[pair]
            if click:
                exam = rel = 1.0
            else:
                denom = 1.0 - th * ga
                exam = th * (1.0 - ga) / denom if denom > 0 else 0.0
                rel = (1.0 - th) * ga / denom if denom > 0 else 0.0
            t_num[p] += exam
            t_den[p] += 1.0
            g_num[pair] += rel
            g_den[pair] += 1.0
        new_theta = {p: (t_num[p] / t_den[p] if t_den[p] else theta[p]) for p in theta}
        new_gamma = {pair: g_num[pair] / g_den[pair] for pair in gamma}
        shift = max([abs(new_theta[p] - theta[p]) for p in theta] + [0.0])
        theta, gamma = new_theta, new_gamma
        if shift < tol:
            break
    return ClickModel(theta=theta, gamma=gamma, iterations=done)


def pairs(sessions: list[Session], depth: int, model: ClickModel | None, clip: float) -> list[dict[str, Any]]:
    """(clicked doc above each shown unclicked doc) per session; IPS-weighted with `model`, else weight 1."""
    out = []
    for s in sessions:
        seen = s.examined_positions(depth)
        skipped = [p for p in seen if p not in s.clicked]
        for p in sorted(s.clicked):
            if p > min(depth, len(s.hits)):
                continue
            weight = 1.0
            if model is not None:
                rho = model.relative(p)
                weight = min(1.0 / rho, clip) if rho > 0 else clip
            out += [{"query_key": s.key, "query": s.query, "positive": s.hits[p - 1], "negative": s.hits[n - 1],
                     "position": p, "weight": round(weight, 6), "client_id": s.client_id} for n in skipped]
    return out


def coec(sessions: list[Session], depth: int, min_impressions: int) -> dict[tuple[str, str], float]:
    """{(query key, doc): clicks / (impressions x CTR at the pair's best rank)}, CTR per position over all traffic."""
    shown: dict[int, int] = defaultdict(int)
    clicks: dict[int, int] = defaultdict(int)
    pair_shown: dict[tuple[str, str], int] = defaultdict(int)
    pair_clicks: dict[tuple[str, str], int] = defaultdict(int)
    best: dict[tuple[str, str], int] = {}
    for s in sessions:
        for p in s.examined_positions(depth):
            pair = (s.key, s.hits[p - 1])
            shown[p] += 1
            pair_shown[pair] += 1
            best[pair] = min(best.get(pair, p), p)
            if p in s.clicked:
                clicks[p] += 1
                pair_clicks[pair] += 1
    ctr = {p: clicks[p] / shown[p] for p in shown}
    return {pair: pair_clicks[pair] / (n * ctr[best[pair]]) for pair, n in pair_shown.items()
            if n >= min_impressions and ctr[best[pair]] > 0}


def ctr_by_position(sessions: list[Session], depth: int) -> dict[int, float]:
    """Clicks / impressions per position (what naive estimates of examination would read)."""
    shown: dict[int, int] = defaultdict(int)
    clicks: dict[int, int] = defaultdict(int)
    for s in sessions:
        for p in s.examined_positions(depth):
            shown[p] += 1
            clicks[p] += p in s.clicked
    return {p: clicks[p] / shown[p] for p in sorted(shown)}
