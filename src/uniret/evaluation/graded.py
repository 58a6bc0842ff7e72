"""nDCG@k on real-valued judgments (click-derived relevance, COEC), per query.

pytrec_eval takes integer grades only, and rounding a click model's relevance (a probability) or a
COEC ratio to an integer would erase the very differences these judgments carry, so the metric is
computed here, with the same linear gain trec_eval's ndcg uses on graded qrels:

    DCG@k  = sum over ranks i = 1..k of  gain(d_i) / log2(i + 1),   gain(d) = the judgment of d (0 unjudged)
    nDCG@k = DCG@k / IDCG@k,  IDCG@k = the DCG@k of the query's judgments sorted in decreasing order

Docs are ranked as trec_eval ranks them (score descending, ties by doc id descending:
uniret.evaluation.metrics.trec_order). A query whose judgments are all 0 has no ideal ranking
(IDCG 0): it is left out, on every system alike, so paired comparisons stay on the same queries.
A judged query the run has no results for scores 0.

Click judgments cover only what the logging ranker showed, so a system that ranks documents it never
showed scores them 0 whatever they are worth. `condensed` scores the run's condensed list instead
(Sakai, SIGIR 2007, "Alternatives to bpref"): the run with every unjudged document removed, then cut
at k; a judged 0 (shown, never clicked) stays. The metric's name is then "condensed_ndcg@k".
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from uniret.core.runs import Run
from uniret.evaluation.metrics import trec_order

GradedQrels = dict[str, dict[str, float]]  # {query: {doc: judgment >= 0}}


CONDENSED = "condensed_"  # the prefix of a metric scored on the condensed list


def parse_ndcg_cutoff(metric: str) -> int:
    """k of "ndcg@k" or "condensed_ndcg@k" (the only families computed on real-valued judgments)."""
    family, _, cut = metric.removeprefix(CONDENSED).partition("@")
    if family != "ndcg" or not cut.isdigit() or int(cut) < 1:
        raise ValueError(f"graded metric must be ndcg@<k> or condensed_ndcg@<k> with k >= 1, got {metric!r}")
    return int(cut)


def _dcg(gains: list[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def judged_queries(qrels: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Queries with at least one positive judgment: those nDCG is defined on."""
    return sorted(q for q, docs in qrels.items() if any(v > 0 for v in docs.values()))


def _ranked(run: Run, qid: str) -> list[str]:
    return [doc for doc, _ in trec_order({d: float(s) for d, s in (run.get(qid) or {}).items()})]


def graded_ndcg(qrels: Mapping[str, Mapping[str, float]], run: Run, k: int,
                condensed: bool = False) -> dict[str, float]:
    """{query: nDCG@k} of `run` on every query of `qrels` with a positive judgment; `condensed`: on the
    run's condensed list (formula and why: module doc)."""
    out = {}
    for qid in judged_queries(qrels):
        judged = qrels[qid]
        ideal = _dcg(sorted((v for v in judged.values() if v > 0), reverse=True)[:k])
        ranked = [doc for doc in _ranked(run, qid) if not condensed or doc in judged][:k]
        out[qid] = _dcg([max(judged.get(doc, 0.0), 0.0) for doc in ranked]) / ideal
    return out


def judged_share(qrels: Mapping[str, Mapping[str, float]], run: Run, k: int) -> dict[str, float]:
    """{query: share of the run's top k with a judgment} on the queries graded_ndcg scores: how much of
    a full-list nDCG rests on documents the logs say something about."""
    out = {}
    for qid in judged_queries(qrels):
        out[qid] = sum(doc in qrels[qid] for doc in _ranked(run, qid)[:k]) / k
    return out
