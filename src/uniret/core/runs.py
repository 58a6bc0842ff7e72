"""TREC run files: `qid Q0 docid rank score tag`, the exchange format between retrieval and evaluation."""

from __future__ import annotations

import os
from pathlib import Path

from uniret.core.errors import DataError, DataProblem
from uniret.utils.files import atomic_write_text

Run = dict[str, dict[str, float]]  # {query_id: {doc_id: score}}


def ranked(scores: dict[str, float], k: int | None = None) -> list[tuple[str, float]]:
    """Docs sorted by score descending (doc id breaks ties, so runs are deterministic)."""
    items = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return items[:k] if k is not None else items


def write_run(path: str | os.PathLike, run: Run, tag: str, k: int | None = None) -> Path:
    """Atomically write `run` in TREC format, at most `k` docs per query."""
    lines = []
    for qid in sorted(run):
        for rank, (did, score) in enumerate(ranked(run[qid], k), start=1):
            lines.append(f"{qid} Q0 {did} {rank} {score:.6f} {tag}\n")
    return atomic_write_text(path, "".join(lines))


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run file into {query_id: {doc_id: score}}."""
    path = Path(path)
    run: Run = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise DataError(DataProblem(path, lineno, None, f"expected 6 columns, got {len(parts)}"))
            try:
                score = float(parts[4])
            except ValueError as exc:
                raise DataError(DataProblem(path, lineno, "score", f"not a number: {parts[4]!r}")) from exc
            run.setdefault(parts[0], {})[parts[2]] = score
    return run
