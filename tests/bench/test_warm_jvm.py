"""bench.modes.warm_jvm: BM25 searched the asked number of times, the queries in turn at the bench's
depth, untimed; nothing to search with no queries."""

from __future__ import annotations

from uniret.bench.modes import warm_jvm


class Recording:
    def __init__(self):
        self.calls = []

    def search(self, queries, k):
        self.calls.append((dict(queries), k))
        return {}


def test_cycles_through_the_queries_at_depth_k():
    searcher = Recording()
    out = warm_jvm(searcher, {"a": "one", "b": "two"}, 5, 10)
    assert [q for q, _ in searcher.calls] == [{"a": "one"}, {"b": "two"}, {"a": "one"}, {"b": "two"}, {"a": "one"}]
    assert {k for _, k in searcher.calls} == {10}
    assert out["queries"] == 5 and out["seconds"] >= 0


def test_no_queries_no_searches():
    searcher = Recording()
    assert warm_jvm(searcher, {}, 5, 10)["queries"] == 0 and searcher.calls == []
