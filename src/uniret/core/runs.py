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


def ranking_differences(want: dict[str, float], got: dict[str, float], k: int, tol: float) -> list[str]:
    """Where `got`'s top k differs from `want`'s by more than ties within `tol`; [] when they agree.

    Two computations of one ranking on other SIMD kernels, thread counts or batch shapes agree
    only up to float noise: documents whose scores lie within `tol` may trade places, and a list
    cut at k may end on either of them. That is all this allows: at every position the two scores
    are within `tol`, and a document in another place scores, in the list it is missing from,
    within `tol` of the score it would replace (or that list's depth ends within `tol` of it).
    """
    w, g = ranked(want, k), ranked(got, k)
    if len(w) != len(g):
        return [f"{len(g)} documents where {len(w)} were expected"]
    floor = {"want": min(want.values(), default=0.0), "got": min(got.values(), default=0.0)}
    problems = []
    for pos, ((wd, ws), (gd, gs)) in enumerate(zip(w, g, strict=True), start=1):
        if abs(ws - gs) > tol:
            problems.append(f"rank {pos}: score {gs:.6g} where {ws:.6g} was expected ({gd} vs {wd})")
        elif wd != gd:
            for doc, other, side, score in ((gd, want, "want", ws), (wd, got, "got", gs)):
                in_other = other.get(doc, floor[side])
                if abs(in_other - score) > tol:
                    problems.append(f"rank {pos}: {gd} in place of {wd}, and {doc} scores {in_other:.6g} "
                                    f"in the other list, not within {tol:g} of {score:.6g}")
                    break
    return problems
