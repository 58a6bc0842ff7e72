"""Hard-negative sampling from a head's own ranking (UnifieR Eq. 8, LED's N_mix).

For each training query a head ranks the corpus; its judged positives are removed, the ranks
[window_start, window_end) of what remains form the window, and `per_query` negatives are drawn
from it (a generator seeded by (seed, channel, query id): a query's negatives do not depend on the
other queries). An optional false-negative filter drops window documents scoring at least
`ratio` times the query's weakest positive under the same head: likely relevant but unjudged.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from uniret.core.runs import Run, ranked


def window_candidates(
    hits: Mapping[str, float],
    positives: set[str],
    window: tuple[int, int],
    positive_floor: float | None = None,
    ratio: float | None = None,
) -> list[str]:
    """The window of `hits` (best first, positives removed), false negatives filtered when asked."""
    order = [d for d, _ in ranked(dict(hits)) if d not in positives]
    chosen = order[window[0] : window[1]]
    if ratio is not None and positive_floor is not None and positive_floor > 0:
        chosen = [d for d in chosen if hits[d] < ratio * positive_floor]
    return chosen


def sample_window(
    run: Run,
    positives: Mapping[str, list[str]],
    window: tuple[int, int],
    per_query: int,
    seed: int,
    channel: str,
    positive_floor: Mapping[str, float] | None = None,
    ratio: float | None = None,
) -> dict[str, list[str]]:
    """{query id: negatives in rank order} for every query of `positives` (see module doc)."""
    out: dict[str, list[str]] = {}
    for qid, pos in positives.items():
        floor = positive_floor.get(qid) if positive_floor else None
        cands = window_candidates(run.get(qid, {}), set(pos), window, floor, ratio)
        rng = random.Random(f"{seed}:{channel}:{qid}")
        picked = set(rng.sample(cands, min(per_query, len(cands))))
        out[qid] = [d for d in cands if d in picked]
    return out


def positive_recall(run: Run, positives: Mapping[str, list[str]]) -> float:
    """Share of queries with at least one positive in their run (how well the head already retrieves)."""
    if not positives:
        return 0.0
    found = sum(1 for qid, pos in positives.items() if set(pos) & set(run.get(qid, {})))
    return found / len(positives)


def merge_negatives(*lists: list[str]) -> list[str]:
    """Union of negative lists, interleaved (one from each in turn) so neither head dominates a prefix."""
    merged: list[str] = []
    for i in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if i < len(x) and x[i] not in merged:
                merged.append(x[i])
    return merged
