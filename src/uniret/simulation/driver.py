"""Simulated users on the real HTTP server: search, get the results, post impressions and clicks.

Each session draws a query from the Zipf-like stream of the folder's judged queries, POSTs it to
/search as one of `clients` simulated client ids, posts one impression per result shown (ordinal =
1-based rank) and the clicks the protocol draws on the qrels grades of those results, as one UBI
event batch to /events. The summary states every assumption behind its figures.
"""

from __future__ import annotations

import http.client
import random
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from uniret.bench.http_client import request_json
from uniret.clicks.protocol import ClickProtocol
from uniret.config.simulation import SimulateConfig
from uniret.data.beir import BeirDataset, read_qrels
from uniret.simulation.traffic import zipf_stream

APPLICATION = "uniret-simulate"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _event(action: str, query_id: str, client: str, session: str, doc: str, rank: int) -> dict[str, Any]:
    return {"application": APPLICATION, "action_name": action, "query_id": query_id, "client_id": client,
            "session_id": session, "timestamp": _now(),
            "event_attributes": {"object": {"object_id": doc, "object_id_field": "doc_id"},
                                 "position": {"ordinal": rank}}}


def protocol_for(cfg: SimulateConfig, qrels: dict[str, dict[str, int]]) -> ClickProtocol:
    """The click protocol of `cfg`; ymax defaults to the highest grade in the qrels."""
    top = cfg.max_grade if cfg.max_grade is not None else max((g for rel in qrels.values() for g in rel.values()),
                                                              default=1)
    return ClickProtocol(eta=cfg.eta, click_noise=cfg.click_noise, click_max=cfg.click_max, max_grade=max(1, top))


def simulate(host: str, port: int, folder: Path, cfg: SimulateConfig, timeout_s: float = 60.0) -> dict[str, Any]:
    """Run `cfg.sessions` sessions against the server at host:port; returns the figures and their assumptions."""
    dataset = BeirDataset(folder)
    qrels = read_qrels(dataset.qrels_path(cfg.split))
    texts = dataset.queries()
    ids = sorted(q for q in qrels if q in texts)
    protocol = protocol_for(cfg, qrels)
    rng = random.Random(cfg.seed)
    click_rng = np.random.default_rng(cfg.seed)
    stream = zipf_stream(ids, cfg.zipf_exponent, cfg.seed)
    shown, clicked, drawn = Counter(), Counter(), Counter()
    failures: Counter = Counter()
    events_posted = 0
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        for n in range(cfg.sessions):
            qid = next(stream)
            drawn[qid] += 1
            client = f"sim-{rng.randrange(cfg.clients)}"
            # the client's own query id (UBI lets it send one): a rerun logs the same ids
            body: dict[str, Any] = {"query": texts[qid], "k": cfg.depth, "client_id": client,
                                    "query_id": f"sim-{cfg.seed}-{n}"}
            if cfg.mode:
                body["mode"] = cfg.mode
            status, answer = request_json(conn, "POST", "/search", body)
            if status != 200 or not isinstance(answer, dict) or "query_id" not in answer:
                failures[f"search {status}"] += 1
                continue
            hits = [h["doc_id"] for h in answer["results"]]
            ranks = protocol.sample_clicks([qrels[qid].get(doc, 0) for doc in hits], click_rng)
            session = f"sim-session-{cfg.seed}-{n}"
            events = [_event("impression", answer["query_id"], client, session, doc, r) for r, doc in enumerate(hits, 1)]
            events += [_event("click", answer["query_id"], client, session, hits[r - 1], r) for r in ranks]
            status, reply = request_json(conn, "POST", "/events", {"events": events})
            if status // 100 != 2:
                failures[f"events {status}: {str(reply)[:200]}"] += 1
                continue
            events_posted += len(events)
            shown.update(range(1, len(hits) + 1))
            clicked.update(ranks)
    finally:
        conn.close()
    head = drawn.most_common(1)[0][1] if drawn else 0
    return {
        "assumptions": {
            "folder": str(folder), "split": cfg.split, "judged_queries": len(ids), "seed": cfg.seed,
            "zipf_exponent": cfg.zipf_exponent, "depth": cfg.depth, "clients": cfg.clients, "mode": cfg.mode,
            "click_protocol": protocol.to_json(),
            "examination_true": {r: round(protocol.examination(r), 4) for r in range(1, cfg.depth + 1)},
        },
        "sessions": cfg.sessions, "sessions_logged": cfg.sessions - sum(failures.values()),
        "distinct_queries": len(drawn), "head_query_sessions": head,
        "events_posted": events_posted, "clicks": sum(clicked.values()),
        "ctr_by_rank": {r: round(clicked[r] / shown[r], 4) for r in sorted(shown)},
        "failures": dict(failures),
    }
