"""Training negatives sampled from a ranking, and their JSONL file.

negatives.jsonl holds one JSON object per training query:
{"query_id": str, "query": str, "positives": [doc ids], "negatives": [doc ids]}.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from uniret.core.errors import DataError, DataProblem
from uniret.core.runs import Run, ranked
from uniret.data.beir import Qrels, json_objects
from uniret.utils.files import atomic_write_text


@dataclass(frozen=True)
class NegativesRecord:
    """One training query with its judged positives and sampled negatives."""

    query_id: str
    query: str
    positives: list[str]
    negatives: list[str]


def positives_of(judged: dict[str, int]) -> list[str]:
    """Doc ids judged relevant (score > 0), most relevant first, then by id."""
    return [did for did, score in sorted(judged.items(), key=lambda kv: (-kv[1], kv[0])) if score > 0]


def sample_negatives(
    run: Run,
    qrels: Qrels,
    queries: dict[str, str],
    depth: int,
    per_query: int,
    seed: int,
) -> list[NegativesRecord]:
    """For each judged query with a positive, sample `per_query` negatives from the run's top `depth`.

    Every doc the qrels judge relevant (score > 0) is excluded. Each query draws from its own
    random.Random seeded with (seed, query id), so a query's negatives do not change when other
    queries are added or removed. Negatives are listed in rank order; a query with fewer
    candidates than `per_query` gets them all. Queries with no positive are left out.
    """
    records = []
    for qid in sorted(qrels):
        positives = positives_of(qrels[qid])
        if not positives or qid not in queries:
            continue
        excluded = set(positives)
        candidates = [did for did, _ in ranked(run.get(qid, {}), depth) if did not in excluded]
        rng = random.Random(f"{seed}:{qid}")
        picked = set(rng.sample(candidates, min(per_query, len(candidates))))
        negatives = [did for did in candidates if did in picked]
        records.append(NegativesRecord(qid, queries[qid], positives, negatives))
    return records


def write_negatives(path: str | os.PathLike, records: list[NegativesRecord]) -> Path:
    """Atomically write records as JSON lines."""
    text = "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in records)
    return atomic_write_text(path, text)


def iter_negatives(path: str | os.PathLike) -> Iterator[NegativesRecord]:
    """Read a negatives.jsonl file; a malformed line is a DataError naming file, line and field."""
    path = Path(path)
    for lineno, obj in json_objects(path):
        for name in ("query_id", "query"):
            if not isinstance(obj.get(name), str):
                raise DataError(DataProblem(path, lineno, name, "missing or not a string"))
        for name in ("positives", "negatives"):
            ids = obj.get(name)
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise DataError(DataProblem(path, lineno, name, "missing or not a list of doc ids"))
        yield NegativesRecord(obj["query_id"], obj["query"], obj["positives"], obj["negatives"])
