"""Readable metric names ("ndcg@10", "mrr@10", "recall@100", "map") and the pytrec_eval measure
each one stands for. Config checks names with it, uniret.evaluation.metrics computes them."""

from __future__ import annotations

import re
from dataclasses import dataclass

# readable family -> pytrec_eval measure (with a cutoff k it is asked for as "<measure>.k")
_CUT_MEASURES = {"ndcg": "ndcg_cut", "recall": "recall", "precision": "P", "map": "map_cut"}
# measures that take no cutoff in trec_eval; MRR@k is recip_rank on runs truncated to k
_UNCUT_MEASURES = {"map": "map", "mrr": "recip_rank"}
_NAME = re.compile(r"^(?P<family>[a-z]+)(?:@(?P<k>[1-9][0-9]*))?$")
_ALLOWED = "ndcg@k, mrr@k, recall@k, precision@k, map, map@k"


@dataclass(frozen=True)
class MetricSpec:
    """How one readable metric is computed with pytrec_eval."""

    name: str  # readable, e.g. "ndcg@10"
    measure: str  # what RelevanceEvaluator is asked for, e.g. "ndcg_cut.10"
    key: str  # the key of its per-query result, e.g. "ndcg_cut_10"
    truncate: int | None  # evaluate on each query's top-`truncate` docs only (MRR@k)


def parse_metric(name: str) -> MetricSpec:
    """Map a readable metric name to its pytrec_eval measure; ValueError names the allowed forms."""
    m = _NAME.match(name.strip().lower()) if isinstance(name, str) else None
    if not m or m.group("family") not in {*_CUT_MEASURES, *_UNCUT_MEASURES}:
        raise ValueError(f"unknown metric {name!r}; allowed: {_ALLOWED}")
    name, family = m.group(0), m.group("family")
    k = int(m.group("k")) if m.group("k") else None
    if family == "mrr":
        if k is None:
            raise ValueError(f"metric {name!r} needs a cutoff, e.g. mrr@10; allowed: {_ALLOWED}")
        return MetricSpec(name, "recip_rank", "recip_rank", truncate=k)
    if k is None:
        if family not in _UNCUT_MEASURES:
            raise ValueError(f"metric {name!r} needs a cutoff, e.g. {family}@10; allowed: {_ALLOWED}")
        measure = _UNCUT_MEASURES[family]
        return MetricSpec(name, measure, measure, truncate=None)
    measure = _CUT_MEASURES[family]
    return MetricSpec(name, f"{measure}.{k}", f"{measure}_{k}", truncate=None)
