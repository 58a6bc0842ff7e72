"""RandPair: on a configured share of answers, swap one random pair of results.

One ranker showing one ordering per query does not identify the examination propensities (see
uniret.clicks.propensity). A small share of answers with two results swapped gives swap
interventions that intervention harvesting (uniret.clicks.harvest) reads. Two kinds:
- `adjacent` (the default): results k and k + 1, k uniform over the depth's adjacent pairs; each
  swap moves a result by one rank, so it costs little nDCG, but links rank 1 to rank 10 only
  through a chain of nine ratios (Radlinski and Joachims's FairPairs, AAAI 2006, swap neighbours too).
- `top`: result 1 and result k, k uniform in 2 .. depth (the RandPair of Joachims, Swaminathan and
  Schnabel, WSDM 2017): every swap compares a rank with rank 1 directly, at a larger cost in nDCG.

Where it is applied: serving would call `rand_pair` on the list it is about to answer, before the
query record is written, so the record's `query_response_hit_ids` already hold the order shown and
the estimators need no flag. The share would be a serving setting; this module only holds the
function, with the caller's seeded RNG so that tests and simulations replay.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal, TypeVar

T = TypeVar("T")
Kind = Literal["adjacent", "top"]


def rand_pair(hits: Sequence[T], share: float, rng: random.Random, depth: int = 10,
              kind: Kind = "adjacent") -> tuple[list[T], tuple[int, int] | None]:
    """(the list to show, the two 1-based ranks whose results swapped places, or None when none did).

    With probability `share` two results within the first min(depth, len(hits)) swap: k and k + 1
    (`adjacent`) or 1 and k (`top`), k uniform over the possible pairs; otherwise the list is
    returned as it came. `hits` is never changed.
    """
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share}")
    if depth < 2:
        raise ValueError(f"depth must be at least 2 (a pair), got {depth}")
    if kind not in ("adjacent", "top"):
        raise ValueError(f"kind must be 'adjacent' or 'top', got {kind!r}")
    out = list(hits)
    span = min(depth, len(out))
    if span < 2 or rng.random() >= share:
        return out, None
    if kind == "adjacent":
        k = rng.randrange(1, span)  # 1 .. span - 1
        pair = (k, k + 1)
    else:
        pair = (1, rng.randrange(2, span + 1))  # 2 .. span
    i, j = pair[0] - 1, pair[1] - 1
    out[i], out[j] = out[j], out[i]
    return out, pair
