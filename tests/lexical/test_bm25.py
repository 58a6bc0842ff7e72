"""BM25 through Lucene on a small hand-made corpus: ranking, stemming, titles, k1/b, BEIR input."""

from __future__ import annotations

import dataclasses
import json

import pytest

from uniret.config.sections import Bm25Config
from uniret.data.beir import BeirDataset, Document
from uniret.lexical.bm25 import Bm25Searcher, bm25_search, build_bm25_index, index_documents

DOCS = [
    Document("solar", "Solar power", "Photovoltaic panels convert sunlight into electricity."),
    Document("cat", "", "The cat sat on the mat and watched the birds."),
    Document("running", "", "Running shoes for marathon runners who run every day."),
    Document("cars", "Electric cars", "Batteries and motors replace the combustion engine."),
    Document("soup", "", "A recipe for tomato soup with basil and garlic."),
]


@pytest.fixture(scope="module")
def cfg() -> Bm25Config:
    return Bm25Config(k1=0.9, b=0.4, stemmer="porter", top_n=10, threads=1)


@pytest.fixture(scope="module")
def index(tmp_path_factory, cfg):
    out = tmp_path_factory.mktemp("bm25") / "index"
    stats = index_documents(DOCS, out, cfg, total=len(DOCS))
    assert stats.docs == len(DOCS) and stats.skipped == 0
    return out


def test_doc_with_the_query_terms_ranks_first(index, cfg):
    run = bm25_search(index, {"q1": "sunlight panel", "q2": "tomato garlic soup"}, cfg)
    assert max(run["q1"], key=run["q1"].get) == "solar"
    assert max(run["q2"], key=run["q2"].get) == "soup"
    assert set(run["q1"]) == {"solar"}  # stored ids come back; no other doc shares a term


def test_porter_stemming_matches_inflections(index, cfg):
    run = bm25_search(index, {"q": "runs"}, cfg)  # the doc says "Running", "runners", "run"
    assert list(run["q"]) == ["running"]


def test_without_stemming_inflections_do_not_match(tmp_path):
    cfg = Bm25Config(stemmer="none", top_n=10, threads=1)
    out = tmp_path / "nostem"
    index_documents(DOCS, out, cfg)
    run = bm25_search(out, {"q": "converts", "exact": "convert"}, cfg)
    assert run["q"] == {}
    assert list(run["exact"]) == ["solar"]


def test_title_is_indexed_and_stopwords_removed(index, cfg):
    run = bm25_search(index, {"title": "cars", "stop": "the and"}, cfg)
    assert list(run["title"]) == ["cars"]  # "cars" appears only in the title
    assert run["stop"] == {}  # Lucene's English stopwords carry no signal


def test_b_controls_length_normalisation(tmp_path):
    docs = [
        Document("short", "", "apple pie"),
        Document("long", "", "apple " + " ".join(f"filler{i}" for i in range(30))),
        Document("other", "", "pear tart"),
    ]
    scores = {}
    for b in (0.0, 1.0):
        cfg = Bm25Config(k1=1.2, b=b, top_n=10, threads=1)
        out = tmp_path / f"b{b}"
        index_documents(docs, out, cfg)
        scores[b] = bm25_search(out, {"q": "apple"}, cfg)["q"]
    assert scores[0.0]["short"] == pytest.approx(scores[0.0]["long"], rel=1e-5)  # no length norm (float32)
    assert scores[1.0]["short"] > scores[1.0]["long"]


def test_depth_and_batching(index, cfg):
    small_batches = dataclasses.replace(cfg, search_batch_size=1)
    queries = {f"q{i}": "the cat watched electricity and soup" for i in range(3)}
    with Bm25Searcher(index, small_batches) as searcher:
        run = searcher.search(queries, k=2, progress=False)
    assert set(run) == set(queries)
    assert all(len(hits) == 2 for hits in run.values())
    assert run["q0"] == run["q2"]


def test_build_from_beir_dataset_and_missing_index(tmp_path, cfg):
    root = tmp_path / "toy"
    root.mkdir()
    with (root / "corpus.jsonl").open("w") as fh:
        for d in DOCS:
            fh.write(json.dumps({"_id": d.id, "title": d.title, "text": d.text}) + "\n")
    stats = build_bm25_index(BeirDataset(root), tmp_path / "idx", cfg)
    assert stats.docs == len(DOCS)
    assert not list(tmp_path.glob(".idx.tmp-*"))  # built aside, then renamed
    assert list(bm25_search(stats.path, {"q": "marathon"}, cfg)["q"]) == ["running"]
    with pytest.raises(FileNotFoundError, match="BM25 index not found"):
        Bm25Searcher(tmp_path / "nope", cfg)
