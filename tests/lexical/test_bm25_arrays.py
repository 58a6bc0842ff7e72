"""Bm25ArraySearcher returns exactly what Anserini's SimpleSearcher (Bm25Searcher) returns: same doc
ids, same float32 scores, same order, ties included, on real SciFact documents and queries."""

from __future__ import annotations

import json
from itertools import islice

import pytest

from uniret.config.sections import Bm25Config
from uniret.data.beir import BeirDataset, Document
from uniret.lexical.bm25 import Bm25Searcher, index_documents
from uniret.lexical.bm25_arrays import ID_FIELD, TIE_SLACK, Bm25ArraySearcher
from uniret.lexical.jvm import helpers_loaded, java_class

N_DOCS = 1200  # first SciFact documents: enough for full top-1000 lists
N_DUPLICATED = 30  # documents indexed twice more under other ids: exact score ties
N_QUERIES = 40
N_TIED = 150  # > 20 + TIE_SLACK: the tie reaches past the hits collected by score


@pytest.fixture(scope="module")
def cfg() -> Bm25Config:
    return Bm25Config(top_n=1000, threads=1)


@pytest.fixture(scope="module")
def corpus(shared_data) -> list[Document]:
    docs = list(islice(BeirDataset(shared_data / "scifact", "scifact").iter_corpus(), N_DOCS))
    # copies whose ids sort before and after the original: the tie order by stored id is exercised
    copies = [Document(f"{pre}{d.id}", d.title, d.text) for d in docs[:N_DUPLICATED] for pre in ("-dup-", "~dup-")]
    return docs + copies


@pytest.fixture(scope="module")
def index(tmp_path_factory, corpus, cfg):
    out = tmp_path_factory.mktemp("bm25arrays") / "index"
    index_documents(corpus, out, cfg, total=len(corpus))
    return out


@pytest.fixture(scope="module")
def queries(shared_data, corpus) -> dict[str, str]:
    lines = (shared_data / "scifact" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    picked = {q["_id"]: q["text"] for q in map(json.loads, lines[:N_QUERIES])}
    # the duplicated documents' titles: queries that surely hit the tied copies
    picked.update({f"title-{d.id}": d.title for d in corpus[:5]})
    picked.update({"stopwords": "the and of", "unknown": "zzqx wuvvy", "empty": ""})
    return picked


@pytest.fixture(scope="module", params=["java-helper", "java-helper-sorted", "anserini"])
def searchers(request, index, cfg):
    """Every hit-reading path: uniret.TopDocsArrays (needs javac here) over hits collected by score
    and ordered by uniret.IdOrder, or from Lucene's sorted collector; and Anserini's ScoredDocs."""
    helper = request.param.startswith("java-helper")
    if helper and not helpers_loaded():
        pytest.skip("uniret's Java helpers are not on the classpath (no javac on PATH)")
    by_score = request.param == "java-helper"
    with (Bm25Searcher(index, cfg) as reference,
          Bm25ArraySearcher(index, cfg, use_helpers=helper, by_score=by_score) as fast):
        assert fast.uses_helpers == helper  # the path under test is the one taken
        yield reference, fast


@pytest.mark.parametrize("k", [1000, 7])
def test_same_ids_scores_and_order_as_simple_searcher(searchers, queries, k):
    reference, fast = searchers
    want = reference.search(queries, k, progress=False)
    ties = 0
    for qid, text in queries.items():
        ids, scores = fast.search(text, k)
        got = [(fast.docids[i], s) for i, s in zip(ids.tolist(), scores.tolist(), strict=True)]
        assert got == list(want.get(qid, {}).items()), qid  # exact floats, same order
        ties += sum(a[1] - b[1] < 1e-5 for a, b in zip(got, got[1:], strict=False))  # ties, nudged 1e-6 apart
    assert ties > 0  # the copies produced (adjusted) ties, so the tie order was really compared
    assert len(want["unknown"]) == 0 and len(fast.search(queries["unknown"], k)[0]) == 0


def test_duplicates_are_ordered_by_stored_id(searchers, corpus):
    _, fast = searchers
    doc = corpus[0]
    ids, _ = fast.search(doc.title, 1000)
    names = [fast.docids[i] for i in ids.tolist()]
    tied = [n for n in names if n in {doc.id, f"-dup-{doc.id}", f"~dup-{doc.id}"}]
    assert tied == [f"-dup-{doc.id}", doc.id, f"~dup-{doc.id}"]  # equal scores, id order


def test_docid_table_matches_stored_ids_and_is_stable(index, cfg, searchers, corpus):
    """Lucene doc ids are stable for an index that is never modified (the bundle's is written once):
    the table read at open equals a stored-field read per doc, and a second open reads the same table."""
    _, fast = searchers
    reader = java_class("org.apache.lucene.index.DirectoryReader").open(
        java_class("org.apache.lucene.store.FSDirectory").open(java_class("java.io.File")(str(index)).toPath()))
    try:
        stored = reader.storedFields()
        assert fast.docids == [stored.document(i).get(ID_FIELD) for i in range(reader.maxDoc())]
    finally:
        reader.close()
    assert sorted(fast.docids) == sorted(d.id for d in corpus)
    with Bm25ArraySearcher(index, cfg) as again:
        assert again.docids == fast.docids


def test_depth_zero_and_missing_index(searchers, tmp_path, cfg):
    _, fast = searchers
    ids, scores = fast.search("cancer", 0)
    assert ids.size == 0 and scores.size == 0
    with pytest.raises(FileNotFoundError, match="BM25 index not found"):
        Bm25ArraySearcher(tmp_path / "nope", cfg)


def test_ties_past_the_hits_collected_by_score_fall_back_to_the_sorted_search(tmp_path, cfg):
    """150 identical documents tie at every depth: when the hits collected by score (k + TIE_SLACK)
    are all tied with the k-th, uniret.IdOrder cannot know the smallest ids and the sorted search
    answers; when every match was collected it orders them itself. Both equal SimpleSearcher."""
    if not helpers_loaded():
        pytest.skip("uniret's Java helpers are not on the classpath (no javac on PATH)")
    assert N_TIED > 20 + TIE_SLACK  # else k 20 would collect every match
    docs = [Document(f"same-{i:03d}", "", "identical abstract about stem cells") for i in reversed(range(N_TIED))]
    docs.append(Document("other", "", "stem cells"))
    index = tmp_path / "ties"
    index_documents(docs, index, cfg, total=len(docs))
    with Bm25Searcher(index, cfg) as reference, Bm25ArraySearcher(index, cfg) as fast:
        sorted_searches = []
        top = fast._top
        fast._top = lambda query, k: sorted_searches.append(k) or top(query, k)
        for k in (5, 20, N_TIED + 1, N_TIED + 50):
            want = reference.search({"q": "identical stem cells"}, k, progress=False)["q"]
            ids, scores = fast.search("identical stem cells", k)
            got = [(fast.docids[i], s) for i, s in zip(ids.tolist(), scores.tolist(), strict=True)]
            assert got == list(want.items()), k
        assert got[0][0] == "same-000" and got[-1][0] == "other"
    # k 5 and 20 collect k + TIE_SLACK of the N_TIED + 1 matches, all tied with the k-th: sorted
    # search; larger k collect every match: ordered by uniret.IdOrder, no sorted search
    assert sorted_searches == [5, 20]


@pytest.fixture(scope="module", params=["java-helper", "anserini"])
def rm3_searchers(request, index, cfg):
    """Anserini's SimpleSearcher after set_rm3 (the reference) and the array searcher's RM3 path,
    over each hit-reading path."""
    helper = request.param == "java-helper"
    if helper and not helpers_loaded():
        pytest.skip("uniret's Java helpers are not on the classpath (no javac on PATH)")
    with (Bm25Searcher(index, cfg) as reference,
          Bm25ArraySearcher(index, cfg, use_helpers=helper, rm3=True) as fast):
        rm3 = cfg.rm3
        reference._searcher.set_rm3(rm3.fb_terms, rm3.fb_docs, float(rm3.original_query_weight))
        yield reference, fast


@pytest.mark.parametrize("k", [1000, 7])
def test_rm3_gives_the_same_ids_scores_and_order_as_simple_searcher_set_rm3(rm3_searchers, queries, index, cfg, k):
    reference, fast = rm3_searchers
    want = reference.search(queries, k, progress=False)
    changed = 0
    with Bm25ArraySearcher(index, cfg) as plain:
        for qid, text in queries.items():
            ids, scores = fast.search(text, k)
            got = [(fast.docids[i], s) for i, s in zip(ids.tolist(), scores.tolist(), strict=True)]
            assert got == list(want.get(qid, {}).items()), qid  # exact floats, same order
            plain_ids, plain_scores = plain.search(text, k)
            changed += not (plain_ids.tolist() == ids.tolist() and plain_scores.tolist() == scores.tolist())
    # the expansion really ran: most rankings differ from plain BM25's
    assert changed > len(queries) // 2
    assert len(fast.search(queries["unknown"], k)[0]) == 0


def test_rm3_on_an_index_without_document_vectors_is_refused(tmp_path, corpus, cfg):
    from uniret.lexical.indexing import write_lucene_index

    index = tmp_path / "novectors"
    write_lucene_index(((d.id, d.contents) for d in corpus[:50]), index, ["-stemmer", cfg.stemmer], threads=1,
                       batch_size=50)
    with Bm25ArraySearcher(index, cfg) as plain:  # plain BM25 does not need them
        assert len(plain.search("cells", 10)[0]) > 0
    with pytest.raises(ValueError, match=r"novectors: the BM25 index stores no document vectors, which RM3 reads"):
        Bm25ArraySearcher(index, cfg, rm3=True)
