"""Training examples: groups of positive + negatives, random top-up, BM25 group scores."""

from __future__ import annotations

import pytest

from uniret.data.negatives import NegativesRecord
from uniret.training.examples import bm25_group_scores, build_examples

CORPUS = [f"d{i}" for i in range(50)]


def test_one_example_per_positive_with_a_full_group_and_no_positive_negatives():
    records = [
        NegativesRecord("q1", "first", ["d1", "d2"], ["d2", "d3", "d4", "d5"]),  # d2 is judged: never a negative
        NegativesRecord("q2", "second", ["d9"], ["d10"]),  # too few: topped up with random docs
    ]
    examples = build_examples(records, group_size=4, corpus_ids=CORPUS, seed=0)
    assert [(e.query_id, e.doc_ids[0]) for e in examples] == [("q1", "d1"), ("q1", "d2"), ("q2", "d9")]
    for e in examples:
        assert len(e.doc_ids) == 4 and len(set(e.doc_ids)) == 4
        positives = {"q1": {"d1", "d2"}, "q2": {"d9"}}[e.query_id]
        assert not set(e.doc_ids[1:]) & positives
    assert "d10" in examples[2].doc_ids


def test_positives_missing_from_the_corpus_are_dropped_and_max_queries_caps():
    records = [NegativesRecord(f"q{i}", "t", ["gone"] if i == 0 else ["d1"], ["d2", "d3"]) for i in range(4)]
    examples = build_examples(records, group_size=2, corpus_ids=CORPUS, seed=0, max_queries=3)
    assert [e.query_id for e in examples] == ["q1", "q2"]


def test_bm25_group_scores_use_the_run_floor_for_unretrieved_docs():
    records = [NegativesRecord("q", "t", ["d1"], ["d2", "d3"])]
    (example,) = build_examples(records, 3, CORPUS, seed=0)
    scores = bm25_group_scores({"q": {"d2": 7.0, "d3": 4.0}}, [example])
    assert scores.shape == (1, 3)
    assert scores[0, 0].item() == 4.0  # d1 (the positive) missing from the run: the lowest retrieved score


def test_bm25_group_scores_minmax_over_the_run():
    records = [NegativesRecord("q", "t", ["d1"], ["d2", "d3"]), NegativesRecord("flat", "t", ["d1"], ["d2"])]
    examples = build_examples(records, 3, CORPUS, seed=0)
    run = {"q": {"d9": 10.0, "d2": 7.0, "d3": 4.0}, "flat": {"d2": 3.0}}
    scores = {e.query_id: dict(zip(e.doc_ids, row, strict=True))
              for e, row in zip(examples, bm25_group_scores(run, examples, minmax=True).tolist(), strict=True)}
    # q: the run spans [4, 10]; d1 is unretrieved (the floor, 0), d2 (7 - 4) / 6, d3 0
    assert scores["q"] == pytest.approx({"d1": 0.0, "d2": 0.5, "d3": 0.0})
    # a run whose scores are all equal: every document gets 1, as retrieval.fusion.minmax gives
    assert set(scores["flat"].values()) == {1.0}


def test_resampled_examples_follow_the_weights_and_never_draw_a_clicked_doc_as_negative():
    """Importance resampling: a pair weighted 9 is drawn about 9 times as often as one weighted 1; a
    weight of 0 is never drawn; the same seed gives the same examples."""
    from uniret.training.examples import resample_examples

    corpus = [f"d{i}" for i in range(50)]
    pairs = [("q one", "d1", 9.0), ("q one", "d2", 1.0), ("q two", "d3", 0.0)]
    examples = resample_examples(pairs, 4000, 4, corpus, seed=3)
    assert len(examples) == 4000 and examples == resample_examples(pairs, 4000, 4, corpus, seed=3)
    firsts = [e.doc_ids[0] for e in examples]
    assert "d3" not in firsts
    assert 0.87 < firsts.count("d1") / len(firsts) < 0.93
    for e in examples:
        assert len(e.doc_ids) == 4 and not {"d1", "d2"} & set(e.doc_ids[1:])  # both of q one's clicks excluded
    assert len({e.query_id for e in examples}) == 4000
    assert resample_examples([("q", "d1", 0.0)], 10, 4, corpus, seed=3) == []
    with pytest.raises(ValueError, match="too few documents"):
        resample_examples([("q", "d1", 1.0)], 1, 4, ["d1", "d2"], seed=3)


def test_only_the_continual_stage_reads_clicks(tiny_ctx):
    """dvc.yaml gives the continual stage alone artifacts/feedback as a dependency: clicks set on another
    training stage are refused by name before anything is read."""
    import dataclasses

    from uniret.stages.training_clicks import click_training_examples

    cfg = tiny_ctx.params.section("training").warmup
    cfg = dataclasses.replace(cfg, clicks=dataclasses.replace(cfg.clicks, source="ips"))
    with pytest.raises(ValueError, match=r"training.warmup.clicks: only training.continual.clicks"):
        click_training_examples(tiny_ctx, "warmup", cfg, ["d1"], 0)
    assert click_training_examples(tiny_ctx, "warmup", dataclasses.replace(cfg, clicks=tiny_ctx.params.section(
        "training").continual.clicks), ["d1"], 0) == ([], {})
