"""Seeded synthetic click logs with known propensities, to check the estimators (tests, lab).

A collection of queries, each with a pool of candidate documents of known relevance grade; rankers
that order each pool by grade plus noise (successive bundles: similar quality, orderings that
differ); traffic that draws queries Zipf-like (head queries repeat) and a ranker per session, shows
the ranker's top `depth` (optionally through RandPair), and draws clicks from a `ClickProtocol`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from uniret.clicks.protocol import ClickProtocol
from uniret.clicks.randpair import Kind, rand_pair
from uniret.clicks.sessions import Impression, Sessions, query_key


@dataclass(frozen=True)
class Collection:
    """grades[q, j]: the relevance grade of candidate j of query q."""

    grades: np.ndarray

    @property
    def queries(self) -> int:
        return self.grades.shape[0]

    @staticmethod
    def query(q: int) -> str:
        return f"synthetic query {q}"

    @staticmethod
    def doc_id(q: int, j: int) -> str:
        return f"q{q}-d{j}"


def make_collection(queries: int, candidates: int, rng: np.random.Generator,
                    grade_shares: tuple[float, ...] = (0.7, 0.2, 0.1)) -> Collection:
    """Grades 0 .. len(grade_shares) - 1 drawn with these shares (NFCorpus-like: most candidates unjudged)."""
    shares = np.asarray(grade_shares, dtype=float)
    return Collection(rng.choice(len(shares), size=(queries, candidates), p=shares / shares.sum()))


def make_rankers(collection: Collection, rankers: int, rng: np.random.Generator, agreement: float = 0.8,
                 noise: float = 1.0) -> np.ndarray:
    """Orderings (rankers x queries x candidates) by grade + noise; `agreement` is the share of the noise
    variance the rankers have in common (1: identical orderings)."""
    if not 0.0 <= agreement <= 1.0:
        raise ValueError(f"agreement must be in [0, 1], got {agreement}")
    shape = collection.grades.shape
    shared = rng.standard_normal(shape)
    orders = []
    for _ in range(rankers):
        score = collection.grades + noise * (np.sqrt(agreement) * shared
                                             + np.sqrt(1 - agreement) * rng.standard_normal(shape))
        orders.append(np.argsort(-score, axis=1, kind="stable"))
    return np.stack(orders)


def zipf_queries(queries: int, sessions: int, rng: np.random.Generator, exponent: float = 1.0) -> np.ndarray:
    """Query indices of `sessions` searches: query r of a seeded order drawn with probability ~ 1 / r^exponent."""
    order = rng.permutation(queries)
    weights = 1.0 / np.arange(1, queries + 1) ** exponent
    return order[rng.choice(queries, size=sessions, p=weights / weights.sum())]


def simulate(collection: Collection, orderings: np.ndarray, protocol: ClickProtocol, sessions: int, depth: int,
             rng: np.random.Generator, zipf_exponent: float = 1.0, randpair_share: float = 0.0,
             randpair_kind: Kind = "adjacent") -> Sessions:
    """`sessions` impressions, each of a Zipf-drawn query shown by a uniformly drawn ranker (labels r1, r2, ...),
    RandPair (`randpair_kind`) applied on `randpair_share` of them, clicks from `protocol`."""
    n_rankers = orderings.shape[0]
    query = zipf_queries(collection.queries, sessions, rng, zipf_exponent)
    ranker = rng.integers(n_rankers, size=sessions)
    shown = orderings[ranker, query, :depth].copy()
    if randpair_share > 0:
        swap_rng = random.Random(int(rng.integers(2**32)))
        for s in range(sessions):
            shown[s] = rand_pair(shown[s], randpair_share, swap_rng, depth, randpair_kind)[0]
    grades = np.take_along_axis(collection.grades[query], shown, axis=1)
    clicks = protocol.click_matrix(grades, rng)
    out = []
    for s in range(sessions):
        q = int(query[s])
        text = Collection.query(q)
        out.append(Impression(query_key(text), text, tuple(Collection.doc_id(q, int(j)) for j in shown[s]),
                              frozenset(int(p) + 1 for p in np.flatnonzero(clicks[s])), f"r{int(ranker[s]) + 1}",
                              f"s{s}", "synthetic"))
    return Sessions(out)


def ndcg(grades: np.ndarray, ideal: np.ndarray, k: int) -> np.ndarray:
    """nDCG@k per row: `grades` as shown (rows), `ideal` the rows' full grade pools (exponential gain)."""
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = ((2.0 ** grades[:, :k] - 1) * discount[: grades[:, :k].shape[1]]).sum(axis=1)
    best = -np.sort(-ideal, axis=1)[:, :k]
    idcg = ((2.0 ** best - 1) * discount[: best.shape[1]]).sum(axis=1)
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
