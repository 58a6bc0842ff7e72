"""The position-based click model (PBM) fitted by expectation-maximisation.

P(click at rank k on pair (q, d)) = theta_k x gamma_qd: theta_k is the examination propensity of
rank k, gamma_qd the pair's attractiveness (relevance). EM (Chuklin, Markov and de Rijke, "Click
Models for Web Search", 2015; the E-step of Wang et al., WSDM 2018) treats examination E and
relevance R as hidden: a click means E = R = 1; a skip at rank k gives
P(E = 1 | skip) = theta_k (1 - gamma) / (1 - theta_k gamma) and
P(R = 1 | skip) = (1 - theta_k) gamma / (1 - theta_k gamma); the M-step sets theta_k and gamma_qd to
the mean posteriors over their impressions. Here every (pair, rank) cell is updated at once from the
aggregate counts, so a fit over tens of thousands of impressions takes well under a second.

The model's scale is free (theta x c with gamma / c fits the same clicks), and with one gamma per
pair the fit is biased where pairs have few impressions: a pair clicked in the one or two impressions
it had wants gamma = 1 and pulls the theta of its rank up, most in relative terms at deep ranks,
until theta at rank 1 meets its bound of 1 and the ratios bend (E63: worst error over ranks 1-10 of
0.10-0.16 at 15,000 sessions over 1,000 queries, where intervention harvesting gets 0.02-0.03; 0.03
at 60,000). Prefer `uniret.clicks.harvest` for the propensities at such volumes, and fit relevance
here with theta held at them (`fix_theta`).

This is plain EM over one relevance parameter per (query, doc), not regression-EM: Wang et al.
replace gamma by a regression on (query, doc) features, which shares strength across pairs seen
rarely; uniret's sessions carry no features yet. Where the logs show no pair at two ranks, theta is
not identified: where it ends depends on the start and the iterations (`Convergence.identified`
says which ranks are identified).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from uniret.clicks.propensity import Convergence, Propensities, connected_to_first, overlap_support
from uniret.clicks.sessions import ClickDataError, PairCounts, Sessions

EPS = 1e-6  # keeps theta and gamma inside (0, 1), where the posteriors are defined
DEFAULT_TOL = 1e-6


@dataclass(frozen=True)
class PbmFit:
    """A fitted position-based model."""

    theta: np.ndarray  # examination at ranks 1..depth (absolute scale: see uniret.clicks.propensity)
    relevance: dict[tuple[str, str], float]  # gamma per (query key, doc id)
    shown: dict[tuple[str, str], int]  # impressions per pair within depth (how much each gamma rests on)
    propensities: Propensities  # theta / theta[0], with the identified ranks

    @property
    def convergence(self) -> Convergence:
        assert self.propensities.convergence is not None
        return self.propensities.convergence


def _log_likelihood(theta_k: np.ndarray, gamma_k: np.ndarray, shown: np.ndarray, clicked: np.ndarray) -> float:
    prob = theta_k * gamma_k
    return float(np.sum(clicked * np.log(prob) + (shown - clicked) * np.log1p(-prob)))


def fit_pbm(sessions: Sessions | PairCounts, depth: int, iterations: int, tol: float = DEFAULT_TOL,
            init: np.ndarray | None = None, fix_theta: bool = False) -> PbmFit:
    """Fit theta (ranks 1..depth) and gamma (per pair) by EM, stopping when no theta moves more than `tol`
    (no gamma, when theta is held) or after `iterations`.

    `init`: starting theta per rank (default 0.5 everywhere). `fix_theta`: keep theta at `init` and
    fit gamma alone (relevance given propensities estimated elsewhere, e.g. harvested ones times an
    anchor for rank 1).

    Raises ClickDataError when there is nothing to fit: no impression within depth, or no click.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    if fix_theta and init is None:
        raise ValueError("fix_theta needs init: the propensities to hold")
    counts = sessions if isinstance(sessions, PairCounts) else sessions.counts(depth)
    if counts.depth != depth:
        raise ValueError(f"counts are over depth {counts.depth}, asked for {depth}")
    if counts.impressions == 0:
        raise ClickDataError("no impression within the depth: no propensity can be estimated", field="impressions")
    if counts.clicks == 0:
        raise ClickDataError(f"no click in {counts.impressions} impressions: examination cannot be told apart "
                             "from relevance", field="clicks")
    at = counts.position - 1
    shown, clicked = counts.shown.astype(float), counts.clicked.astype(float)
    skipped = shown - clicked
    per_rank = np.bincount(at, shown, depth)
    per_pair = np.bincount(counts.pair, shown, len(counts.pairs))
    theta = np.full(depth, 0.5) if init is None else np.clip(np.asarray(init, dtype=float)[:depth], EPS, 1 - EPS)
    if len(theta) != depth or not np.all(np.isfinite(theta)):
        raise ValueError(f"init must hold {depth} finite values, got {np.asarray(init).tolist()}")
    gamma = np.full(len(counts.pairs), 0.5)
    change, done = np.inf, 0
    for done in range(1, iterations + 1):  # noqa: B007 - `done` is read after the loop
        th, ga = theta[at], gamma[counts.pair]
        denom = 1.0 - th * ga
        exam = clicked + skipped * th * (1.0 - ga) / denom
        rel = clicked + skipped * (1.0 - th) * ga / denom
        new_theta = np.where(per_rank > 0, np.bincount(at, exam, depth) / np.maximum(per_rank, 1), theta)
        new_theta = theta if fix_theta else np.clip(new_theta, EPS, 1 - EPS)
        new_gamma = np.clip(np.bincount(counts.pair, rel, len(counts.pairs)) / np.maximum(per_pair, 1), EPS, 1 - EPS)
        # the propensities settle long before the gamma of pairs seen once or twice: stop on theta, or on
        # gamma when theta is held
        change = float(np.max(np.abs(new_gamma - gamma)) if fix_theta else np.max(np.abs(new_theta - theta)))
        theta, gamma = new_theta, new_gamma
        if change < tol:
            break

    support = overlap_support(counts)
    identified = connected_to_first(support) & (per_rank > 0)
    notes = []
    if not identified[1:].all():
        lost = [r for r in range(2, depth + 1) if not identified[r - 1]]
        notes.append(f"ranks {lost} share no clicked (query, doc) pair with rank 1's component: their theta "
                     "is not identified by these logs (one ordering per query identifies nothing; successive "
                     "rankers or randomised swaps do)")
    converged = change < tol
    if not converged:
        notes.append(f"stopped after {iterations} iterations with a parameter still moving by {change:.2e}")
    if fix_theta:
        notes.append("theta held at the given propensities; gamma fitted alone")
    method = "pbm-em-fixed-theta" if fix_theta else "pbm-em"
    convergence = Convergence(
        method=method, iterations=done, converged=converged, last_change=change,
        log_likelihood=_log_likelihood(theta[at], gamma[counts.pair], shown, clicked),
        identified=tuple(bool(x) for x in identified), support=tuple(tuple(int(v) for v in r) for r in support),
        notes=tuple(notes))
    relative = theta / theta[0]
    return PbmFit(
        theta=theta,
        relevance={pair: float(g) for pair, g in zip(counts.pairs, gamma, strict=True)},
        shown={pair: int(n) for pair, n in zip(counts.pairs, per_pair, strict=True)},
        propensities=Propensities(tuple(float(v) for v in relative), tuple(bool(x) for x in identified),
                                  convergence.method, convergence))
