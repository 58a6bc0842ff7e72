"""The background writer on real files: layout, order, drops by cause on a full disk (/dev/full),
an unwritable folder and a full queue, each logged once."""

from __future__ import annotations

import json
import logging

from uniret.ubi import EVENTS, QUERIES, LogWriter, iter_records, query_record, span_dir


def _record(i: int, day: str = "2026-12-04") -> dict:
    return query_record(f"q{i}", "c1", f"query {i}", [f"d{i}", "d2"], {"bundle_version": "v1", "mode": "uni", "k": 2},
                        timestamp=f"{day}T23:59:59.{i % 1000:03d}Z")


def test_records_land_in_their_day_file_in_order(tmp_path):
    writer = LogWriter(tmp_path, capacity=100, writer_id="w1").start()
    for i in range(20):
        assert writer.submit(QUERIES, _record(i, "2026-12-04" if i < 10 else "2026-12-05"))
    writer.close()
    assert sorted(p.name for p in span_dir(tmp_path, QUERIES, "2026-12-04").iterdir()) == ["w1.jsonl"]
    day1 = [line.record["query_id"] for line in iter_records(tmp_path, QUERIES, "2026-12-04")]
    day2 = [line.record["query_id"] for line in iter_records(tmp_path, QUERIES, "2026-12-05")]
    assert day1 == [f"q{i}" for i in range(10)] and day2 == [f"q{i}" for i in range(10, 20)]
    assert writer.written[QUERIES] == 20 and not writer.dropped


def test_full_disk_drops_are_counted_and_logged_once(tmp_path, caplog):
    drops = []
    writer = LogWriter(tmp_path, capacity=100, writer_id="w1", opener=lambda path: open("/dev/full", "wb", buffering=0),
                       on_drop=lambda kind, cause, n: drops.append((kind, cause, n)))
    writer.start()
    with caplog.at_level(logging.ERROR, logger="uniret.ubi"):
        for i in range(5):
            assert writer.submit(EVENTS if i % 2 else QUERIES, _record(i))
            assert writer.flush()
    writer.close()
    assert writer.dropped == {"disk_full": 5} and writer.written.total() == 0
    assert sum(n for _, cause, n in drops if cause == "disk_full") == 5
    assert len([r for r in caplog.records if "disk_full" in r.getMessage()]) == 1


def test_unwritable_folder_drops_and_recovers_nothing_raised(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a regular file where the log folder's parent should be")
    writer = LogWriter(blocker / "logs", capacity=10, writer_id="w1").start()
    assert writer.submit(QUERIES, _record(1))
    writer.close()
    assert writer.dropped == {"unwritable": 1}


def test_full_queue_drops_instead_of_waiting(tmp_path):
    writer = LogWriter(tmp_path, capacity=2, writer_id="w1")  # not started: nothing drains the queue
    assert writer.submit(QUERIES, _record(1)) and writer.submit(QUERIES, _record(2))
    assert not writer.submit(QUERIES, _record(3))
    assert writer.dropped == {"queue_full": 1}
    writer.start().close()  # the two queued records are still written
    assert [json.loads(t)["query_id"] for t in (span_dir(tmp_path, QUERIES, "2026-12-04") / "w1.jsonl").read_text().splitlines()] == ["q1", "q2"]


def test_unencodable_record_is_dropped_not_fatal(tmp_path):
    writer = LogWriter(tmp_path, capacity=10, writer_id="w1").start()
    bad = {**_record(1), "query_attributes": {"score": float("nan")}}
    writer.submit(QUERIES, bad)
    writer.submit(QUERIES, _record(2))
    writer.close()
    assert writer.dropped == {"unencodable": 1} and writer.written[QUERIES] == 1
