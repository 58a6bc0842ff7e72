"""Layout, retention and forgetting a client on real span files."""

from __future__ import annotations

import json
from datetime import date

from uniret.ubi import (
    EVENTS,
    QUERIES,
    closed_days,
    delete_expired,
    forget_client,
    iter_records,
    list_days,
    span_dir,
)


def _write(log_dir, kind, day, writer, records):
    folder = span_dir(log_dir, kind, day)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{writer}.jsonl").write_text("".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in records))


def test_days_closed_and_damaged_lines(tmp_path):
    _write(tmp_path, QUERIES, "2026-12-03", "a", [{"query_id": "q1", "client_id": "x"}, "not json\n"])
    _write(tmp_path, EVENTS, "2026-12-05", "a", [{"query_id": "q1", "client_id": "x"}])
    (tmp_path / QUERIES / "junk").mkdir()
    assert list_days(tmp_path) == ["2026-12-03", "2026-12-05"]
    assert closed_days(tmp_path, date(2026, 12, 5)) == ["2026-12-03"]
    lines = list(iter_records(tmp_path, QUERIES, "2026-12-03"))
    assert [(ln.line, ln.record is None) for ln in lines] == [(1, False), (2, True)]


def test_retention_deletes_spans_older_than_the_setting(tmp_path):
    for day in ("2026-11-01", "2026-11-05", "2026-11-06", "2026-12-05"):
        _write(tmp_path, QUERIES, day, "a", [{"query_id": day}])
        _write(tmp_path, EVENTS, day, "a", [{"query_id": day}])
    assert delete_expired(tmp_path, 30, date(2026, 12, 6)) == ["2026-11-01", "2026-11-05"]
    assert list_days(tmp_path, QUERIES) == list_days(tmp_path, EVENTS) == ["2026-11-06", "2026-12-05"]


def test_forget_client_leaves_no_record_of_it(tmp_path):
    for day in ("2026-12-03", "2026-12-04"):
        _write(tmp_path, QUERIES, day, "a", [{"query_id": "q1", "client_id": "alice"}, {"query_id": "q2", "client_id": "bob"}])
        _write(tmp_path, EVENTS, day, "b", [{"query_id": "q1", "client_id": "alice"}, '{"client_id": "alice", torn\n',
                                            {"query_id": "q2", "client_id": "bob"}])
    _write(tmp_path, EVENTS, "2026-12-04", "c", [{"query_id": "q3", "client_id": "bob"}])
    out = forget_client(tmp_path, "alice")
    assert (out.files_rewritten, out.queries_removed, out.events_removed, out.records_removed) == (4, 2, 4, 6)
    everything = "".join(p.read_text() for p in tmp_path.rglob("*.jsonl"))
    assert "alice" not in everything and everything.count("bob") == 5
    assert not list(tmp_path.rglob("*.tmp"))
    assert forget_client(tmp_path, "alice").records_removed == 0
