"""What training reads from the feedback stage's outputs: click positives and logged query texts.

A click positive is (query text, clicked doc, weight): IPS-weighted (`ips`) or weight 1 (`naive`).
Clicks of one (query text, doc) become one example, `aggregate`d: `sum` (their weights summed: a head
query shown a hundred times counts its noise clicks a hundred times) or `rate` (that sum over the
times the pair was shown within the depth: an estimate of its click probability at rank 1, what a
click model calls relevance x attractiveness; pairs/shown.jsonl holds the counts). The weights are
then scaled to a mean of `scale`, so the arms differ in how clicks are spread, not in the learning
rate. A query whose text is a held-out (dev or test) query is dropped, as the pseudo-queries drop it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from uniret.data.pseudo_queries import normalise

PAIR_FILES = {"ips": "pairs/ips.jsonl", "naive": "pairs/naive.jsonl"}
SHOWN_FILE = "pairs/shown.jsonl"  # {query, doc_id, shown}: how often each (query text, doc) was shown within depth
TRAIN_QUERIES = "train_queries.jsonl"
AGGREGATES = ("sum", "rate")


@dataclass
class ClickExamples:
    """Fine-tuning examples from clicks, one per (query text, doc), with what was left out and why."""

    texts: list[str] = field(default_factory=list)
    docs: list[str] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict:
        return {"examples": len(self.texts), "queries": len(set(self.texts)), "left_out": self.left_out}


def _rows(path: Path):
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{line_no}: not JSON ({exc.msg})") from exc


def shown_counts(feedback_dir: Path) -> dict[tuple[str, str], int]:
    """{(query text, doc): times shown within depth} of the training days (pairs/shown.jsonl)."""
    path = feedback_dir / SHOWN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing: the feedback stage that wrote {feedback_dir} predates it; "
                                "rerun `uniret feedback`, or set index.static_query.clicks_aggregate: sum")
    return {(row["query"], row["doc_id"]): int(row["shown"]) for row in _rows(path)}


def click_examples(feedback_dir: Path, kind: str, held: set[str], known_docs: set[str],
                   scale: float = 1.0, aggregate: str = "sum") -> ClickExamples:
    """The `kind` (ips | naive) click positives of the feedback stage's output folder, `aggregate`d per
    (query text, doc) (module doc)."""
    if kind not in PAIR_FILES:
        raise ValueError(f"click examples: kind must be one of {sorted(PAIR_FILES)}, got {kind!r}")
    if aggregate not in AGGREGATES:
        raise ValueError(f"click examples: aggregate must be one of {AGGREGATES}, got {aggregate!r}")
    path = feedback_dir / PAIR_FILES[kind]
    out = ClickExamples()
    if not path.is_file():
        out.left_out["no pairs file (the feedback stage skipped)"] = 1
        return out
    summed: dict[tuple[str, str], float] = defaultdict(float)
    left: dict[str, int] = defaultdict(int)
    for row in _rows(path):
        if normalise(row["query"]) in held:
            left["query text is a held-out (dev or test) query"] += 1
        elif row["doc_id"] not in known_docs:
            left["doc not in the indexed corpus"] += 1
        else:
            summed[(row["query"], row["doc_id"])] += float(row["weight"])
    if summed and aggregate == "rate":
        shown = shown_counts(feedback_dir)
        summed = {pair: w / max(shown.get(pair, 0), 1) for pair, w in summed.items()}
    if summed:
        mean = sum(summed.values()) / len(summed)
        for (text, doc), w in sorted(summed.items()):
            out.texts.append(text)
            out.docs.append(doc)
            out.weights.append(scale * w / mean)
    out.left_out = dict(left)
    return out


def logged_queries(feedback_dir: Path, held: set[str]) -> list[str]:
    """The training days' distinct logged query texts, held-out ones dropped."""
    path = feedback_dir / TRAIN_QUERIES
    if not path.is_file():
        return []
    return [row["text"] for row in _rows(path) if normalise(row["text"]) not in held]
