"""What training reads from the feedback stage's outputs: click positives and logged query texts.

A click positive is (query text, clicked doc, weight): IPS-weighted (`ips`) or weight 1 (`naive`).
Clicks of one (query text, doc) are summed into one example, and the weights are scaled to a mean
of `scale`, so the arms differ in how clicks are spread, not in the learning rate. A query whose
text is a held-out (dev or test) query is dropped, as the pseudo-queries drop it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from uniret.data.pseudo_queries import normalise

PAIR_FILES = {"ips": "pairs/ips.jsonl", "naive": "pairs/naive.jsonl"}
TRAIN_QUERIES = "train_queries.jsonl"


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


def click_examples(feedback_dir: Path, kind: str, held: set[str], known_docs: set[str],
                   scale: float = 1.0) -> ClickExamples:
    """The `kind` (ips | naive) click positives of the feedback stage's output folder."""
    if kind not in PAIR_FILES:
        raise ValueError(f"click examples: kind must be one of {sorted(PAIR_FILES)}, got {kind!r}")
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
