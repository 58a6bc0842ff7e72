"""The dev split: a seeded share of the train dataset's judged train queries, held out of training.

Training stages read their queries from the bm25 stage's negatives file, which leaves the dev
queries out; the index stage learns fusion weights on them. The test split is never read here.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from uniret.config.sections import DevSplitConfig


def dev_query_ids(judged_query_ids: Iterable[str], cfg: DevSplitConfig) -> set[str]:
    """The held-out query ids: round(fraction * n) of the (sorted, de-duplicated) ids, seeded.

    Depends only on the id set and the config, so every stage and every run agrees on it.
    """
    ids = sorted(set(judged_query_ids))
    count = round(len(ids) * cfg.fraction)
    if count == 0:
        return set()
    return set(random.Random(cfg.seed).sample(ids, count))


def split_qrels(qrels: dict[str, dict[str, int]], cfg: DevSplitConfig) -> tuple[dict, dict]:
    """(train qrels, dev qrels) of a train split's qrels."""
    dev = dev_query_ids(qrels, cfg)
    return ({q: r for q, r in qrels.items() if q not in dev}, {q: r for q, r in qrels.items() if q in dev})
