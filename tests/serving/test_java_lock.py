"""search_one holds the process-wide Java lock only for searchers that call Java (Lucene via pyjnius);
dense and in-memory lexical/uni searches run outside it, so concurrent requests use every core."""

from __future__ import annotations

import pytest

from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.fusion import FusionSearcher
from uniret.serving.state import RETRIEVAL_LOCK, search_one


class LockProbe(Searcher):
    """Records whether the calling thread held RETRIEVAL_LOCK while searching."""

    def __init__(self, uses_jvm: bool):
        self.mode = "lexical"
        self.uses_jvm = uses_jvm
        self.held: list[bool] = []

    def search_batch(self, batch: QueryBatch, k: int):
        self.held.append(RETRIEVAL_LOCK._is_owned())
        return {q: {"d1": 1.0} for q in batch.ids}


@pytest.mark.parametrize("uses_jvm", [True, False])
def test_lock_is_held_only_for_java_searchers(uses_jvm):
    probe = LockProbe(uses_jvm)
    assert search_one(probe, "q", "protein folding", 10) == {"q": {"d1": 1.0}}
    assert probe.held == [uses_jvm]


def test_fusion_needs_the_lock_when_any_part_calls_java():
    java, memory = LockProbe(True), LockProbe(False)
    assert FusionSearcher([java, memory], "rrf", depth=10).uses_jvm
    assert not FusionSearcher([LockProbe(False), memory], "rrf", depth=10).uses_jvm
    search_one(FusionSearcher([java, memory], "rrf", depth=10), "q", "protein folding", 10)
    assert java.held == [True] and memory.held == [True]
