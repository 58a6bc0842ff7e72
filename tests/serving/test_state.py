"""ServingState's swap and leases, with small fake searchers (the HTTP tests use a real bundle):
in-flight searches finish on the bundle they started with, old bundles close when idle, and a
bundle that fails to load or to answer the probe leaves the live one untouched."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from uniret.retrieval.base import QueryBatch, Searcher
from uniret.serving.state import BundleLoadError, NotReady, ServingState, close_searchers, pick_default_mode


class FakeSearcher(Searcher):
    """Answers one fixed doc id; can block inside search until released; records close()."""

    def __init__(self, doc: str, fail: bool = False):
        self.mode = "uni"
        self.doc = doc
        self.fail = fail
        self.closed = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def search_batch(self, batch: QueryBatch, k: int):
        if self.fail:
            raise RuntimeError("index file truncated")
        self.entered.set()
        assert self.release.wait(10)
        return {q: {self.doc: 1.0} for q in batch.ids}

    def close(self) -> None:
        self.closed += 1


def _state(bundles: dict) -> ServingState:
    """A state whose loader returns bundles[name] (a searcher dict, or a callable making a fresh one)."""

    def loader(path: Path):
        if path.name not in bundles:
            raise FileNotFoundError(f"{path}: no manifest.json")
        found = bundles[path.name]
        return found() if callable(found) else found

    return ServingState(loader, probe_query="probe", default_mode="uni")


def test_lease_before_any_load_is_not_ready():
    state = _state({})
    with pytest.raises(NotReady), state.lease():
        pass
    assert state.current is None


def test_in_flight_search_finishes_on_the_old_bundle_and_old_closes_after():
    a, b = FakeSearcher("doc-a"), FakeSearcher("doc-b")
    state = _state({"a": {"uni": a}, "b": {"uni": b}})
    state.reload(Path("a"), "A")
    a.release.clear()
    a.entered.clear()
    answers = {}

    def request() -> None:
        with state.lease() as live:
            answers["version"] = live.version
            answers["run"] = live.searchers["uni"].search({"q": "x"}, 10)

    t = threading.Thread(target=request)
    t.start()
    assert a.entered.wait(10)  # the request is inside A's search
    new, old = state.reload(Path("b"), "B")  # swap while it is in flight
    assert (new.version, old.version) == ("B", "A")
    assert state.current.version == "B" and a.closed == 0  # A still leased: not closed
    with state.lease() as live:  # new requests see B at once
        assert live.version == "B" and live.searchers["uni"].search({"q2": "y"}, 1) == {"q2": {"doc-b": 1.0}}
    a.release.set()
    t.join(10)
    assert answers == {"version": "A", "run": {"q": {"doc-a": 1.0}}}
    assert a.closed == 1 and b.closed == 0  # closed once, when its last lease ended


def test_idle_old_bundle_is_closed_at_swap():
    a, b = FakeSearcher("doc-a"), FakeSearcher("doc-b")
    state = _state({"a": {"uni": a}, "b": {"uni": b}})
    state.reload(Path("a"), "A")
    state.reload(Path("b"), "B")
    assert a.closed == 1 and b.closed == 0


def test_failed_load_and_failed_probe_keep_the_live_bundle():
    good, broken = FakeSearcher("doc-a"), FakeSearcher("doc-x", fail=True)
    state = _state({"good": {"uni": good}, "broken": {"uni": broken, "dense": FakeSearcher("doc-y")}})
    state.reload(Path("good"), "G")
    with pytest.raises(BundleLoadError, match="missing.*cannot load bundle.*no manifest.json"):
        state.reload(Path("missing"), "M")
    with pytest.raises(BundleLoadError, match="probe query failed in mode 'uni'.*index file truncated"):
        state.reload(Path("broken"), "X")
    assert state.current.version == "G" and good.closed == 0
    assert broken.closed == 1  # the rejected set was closed, not leaked
    with state.lease() as live:
        assert live.searchers["uni"].search({"q3": "z"}, 1) == {"q3": {"doc-a": 1.0}}


def test_concurrent_leases_and_reloads_never_see_a_closed_bundle():
    made: list[FakeSearcher] = []

    def fresh(name: str):
        def make():
            made.append(FakeSearcher(name))
            return {"uni": made[-1]}
        return make

    state = _state({"a": fresh("a"), "b": fresh("b")})
    state.reload(Path("a"), "a")
    errors = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            with state.lease() as live:
                searcher = live.searchers["uni"]
                if searcher.closed:
                    errors.append(f"{live.version} closed while leased")
                run = searcher.search({"q": "x"}, 1)
                if run != {"q": {live.version: 1.0}}:
                    errors.append(f"answer {run} from bundle {live.version}")

    readers = [threading.Thread(target=reader) for _ in range(8)]
    for t in readers:
        t.start()
    for i in range(20):  # each retirement collects and trims (release_memory): ~0.9 s under 8 spinning readers
        name = "b" if i % 2 == 0 else "a"
        state.reload(Path(name), name)
    stop.set()
    for t in readers:
        t.join(10)
    assert errors == []
    # every retired bundle was closed exactly once; the live one is open
    assert [m.closed for m in made] == [1] * (len(made) - 1) + [0]


def test_close_searchers_closes_shared_parts_once():
    part = FakeSearcher("d")

    class Fused(FakeSearcher):
        def __init__(self):
            super().__init__("f")
            self.searchers = [part, part]

    close_searchers({"lexical": part, "hybrid": Fused()})
    assert part.closed == 1


def test_default_mode_falls_back_to_an_offered_mode():
    assert pick_default_mode(["dense", "bm25"], "uni") == "bm25"
    assert pick_default_mode(["dense", "uni"], "uni") == "uni"


def test_bundle_serve_mode_comes_from_the_recipe_recorded_in_the_manifest(tmp_path):
    import json

    from uniret.retrieval.bundle import FORMAT_VERSION, MANIFEST
    from uniret.serving.state import bundle_serve_mode

    clear = tmp_path / "clear"
    clear.mkdir()
    (clear / MANIFEST).write_text(json.dumps({"format": FORMAT_VERSION, "model": {"serve_mode": "clear"}}))
    older = tmp_path / "older"
    older.mkdir()
    (older / MANIFEST).write_text(json.dumps({"format": FORMAT_VERSION, "model": {}}))
    assert bundle_serve_mode(clear) == "clear"
    assert bundle_serve_mode(older) == "uni"  # bundles from before serve_mode was recorded
    assert bundle_serve_mode(tmp_path / "missing") == "uni"  # the loader itself reports the missing bundle
