"""`uniret simulate` against a real `uniret serve` on 127.0.0.1 (the tiny SciFact bundle) with UBI logging
on: every session's query record and events land in today's span, and the feedback stage's ingestion
checks find no bad record among them."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import yaml

from uniret.bench.server import LocalServer
from uniret.config.sections import SliceConfig
from uniret.config.simulation import SimulateConfig
from uniret.data.beir import BeirDataset, iter_corpus
from uniret.data.slicing import write_slice
from uniret.data.validation import GxSession
from uniret.feedback.ingest import ingest_span
from uniret.simulation.driver import simulate
from uniret.ubi import EVENTS, QUERIES, iter_records

SESSIONS = 40


def test_simulated_sessions_are_served_logged_and_valid(tiny_bundle, tmp_path, repo_root, shared_data):
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    logs = tmp_path / "ubi"
    raw = copy.deepcopy(raw)
    raw["feedback"]["log_dir"] = str(logs)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(raw, sort_keys=False))
    cfg = SimulateConfig(dataset="scifact", split="train", sessions=SESSIONS, seed=3, clients=5, depth=10)
    server = LocalServer(["--bundle", str(tiny_bundle)], params, "tiny", log_dir=tmp_path)
    server.start(300.0)
    try:
        summary = simulate("127.0.0.1", server.port, shared_data / "scifact", cfg)
    finally:
        server.stop()  # the writer flushes its queue on shutdown

    assert summary["failures"] == {} and summary["sessions_logged"] == SESSIONS
    assert summary["distinct_queries"] < SESSIONS  # head queries repeat
    assert summary["assumptions"]["click_protocol"]["eta"] == 1.0 and summary["assumptions"]["seed"] == 3
    assert summary["assumptions"]["zipf_exponent"] == 1.0
    assert summary["clicks"] > 0 and summary["ctr_by_rank"]

    day = datetime.now(UTC).date().isoformat()
    queries = list(iter_records(logs, QUERIES, day))
    events = list(iter_records(logs, EVENTS, day))
    assert len(queries) == SESSIONS
    # the simulator sends its own query ids, so a rerun logs the same ones
    assert sorted(q.record["query_id"] for q in queries) == sorted(f"sim-3-{n}" for n in range(SESSIONS))
    assert len(events) == summary["events_posted"]
    sliced = write_slice(BeirDataset(shared_data / "scifact"), tmp_path / "slice",
                         SliceConfig(**raw["data"]["profiles"]["tiny"]["slice"]))  # the bundle's corpus (tiny_bundle)
    corpus = {d.id for d in iter_corpus(sliced.corpus_path)}
    ingested = ingest_span(GxSession(), day, queries, events, corpus, {})
    assert ingested.rejects == [] and len(ingested.events) == summary["events_posted"], \
        json.dumps([r.to_json() for r in ingested.rejects[:5]])
