"""Scores on the seen and novel test queries of a dataset that overlaps its train split.

The evaluate stage writes them to metrics.json under `overlap` (next to the whole-split figures,
never instead of them), so that an in-domain figure says how much of it is lookup:

    "overlap": {"scifact": {"rule": "...", "counts": {"seen": 198, "novel": 102, ...},
                            "novel_queries": [...], "seen": {system: {metric: v}}, "novel": {system: {...}}}}

`novel_queries` lets a later comparison (results collect's paired intervals) use the same queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from uniret.data.beir import BeirDataset
from uniret.data.overlap import NOVEL, SEEN, OverlapSplit, overlap_split
from uniret.evaluation.metrics import PerQuery

OVERLAP_KEY = "overlap"
_DECIMALS = 6


def subset_mean(rows: PerQuery, queries: Iterable[str], metrics: Sequence[str]) -> dict[str, float] | None:
    """Mean of each metric over `queries` (a judged query absent from `rows` counts 0, as in the
    whole-split mean); None for an empty subset."""
    queries = sorted(queries)
    if not queries:
        return None
    return {m: round(sum((rows.get(q) or {}).get(m, 0.0) for q in queries) / len(queries), _DECIMALS)
            for m in metrics}


def dataset_split(dataset: BeirDataset, train_split: str, eval_split: str, jaccard: float) -> OverlapSplit | None:
    """The overlap split of `dataset`'s eval split against its train split; None without a train split."""
    if train_split not in dataset.splits() or train_split == eval_split:
        return None
    return overlap_split(dataset.queries(), dataset.qrels(train_split), dataset.qrels(eval_split), jaccard)


def overlap_section(split: OverlapSplit, per_query: Mapping[str, Mapping[str, PerQuery]], dataset: str,
                    metrics: Sequence[str]) -> dict[str, Any]:
    """metrics.json's `overlap.<dataset>` entry: the rule, the counts and every system's subset means."""
    section: dict[str, Any] = {"rule": split.rule(), "counts": split.counts(), "novel_queries": sorted(split.novel),
                               SEEN: {}, NOVEL: {}}
    for system, by_dataset in sorted(per_query.items()):
        rows = by_dataset.get(dataset)
        if rows is None:
            continue
        for name, queries in ((SEEN, split.seen), (NOVEL, split.novel)):
            means = subset_mean(rows, queries, metrics)
            if means is not None:
                section[name][system] = means
    return section


def novel_value(doc: Mapping[str, Any], dataset: str, system: str, metric: str) -> float | None:
    """A system's metric on `dataset`'s novel queries from a metrics.json document (None: not measured)."""
    value = ((((doc.get(OVERLAP_KEY) or {}).get(dataset) or {}).get(NOVEL) or {}).get(system) or {}).get(metric)
    return None if value is None else float(value)


def subset_key(dataset: str, subset: str = NOVEL) -> str:
    """The name a subset's comparison goes by in significance files: "scifact:novel"."""
    return f"{dataset}:{subset}"


def novel_subsets(doc: Mapping[str, Any]) -> dict[str, tuple[str, list[str]]]:
    """{"<dataset>:novel": (dataset, its novel query ids)} of a metrics.json document."""
    return {subset_key(d): (d, list(section.get("novel_queries") or []))
            for d, section in (doc.get(OVERLAP_KEY) or {}).items() if section.get("novel_queries")}
