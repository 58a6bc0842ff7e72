"""Ingestion validation of UBI spans with great-expectations: every bad record is kept aside with its reasons.

Each line of a span is parsed and flattened into one row of a table (the query table, the event
table); a field of the wrong type becomes null there. great-expectations then checks the tables
(schema, ids known to the corpus, positions within the shown depth, timestamps inside the span's
UTC day, duplicates) with COMPLETE results, so every offending row is known by its row number. A row
that fails any expectation is rejected with the description of each failed one; every other row is
kept, whatever share of the span is garbage. Lines that are not a JSON object never reach a table:
they are rejected as such. Events whose action is neither an impression nor a click are counted
and set aside (not rejects: UBI logs other actions too).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from uniret.ubi.layout import LogLine
from uniret.utils.text import excerpt

IMPRESSION = "impression"
CLICK = "click"
ACTIONS = (IMPRESSION, CLICK)  # the events the stage learns from
NOT_JSON = "not a JSON object"
ROW = "row"  # the row number column GX reports offending rows by


@dataclass
class Reject:
    """One record set aside: where it was, what it was (cut short) and why."""

    kind: str  # "query" or "event"
    file: str  # the span file's path
    line: int
    reasons: list[str]
    record: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "file": self.file, "line": self.line, "reasons": self.reasons, "record": self.record}


@dataclass
class SpanIngest:
    """What ingestion kept and set aside from one span (one UTC day)."""

    day: str
    queries: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    ignored_actions: Counter = field(default_factory=Counter)
    records: int = 0  # lines read (queries + events)

    @property
    def reject_share(self) -> float:
        return len(self.rejects) / self.records if self.records else 0.0

    def reasons(self) -> dict[str, int]:
        """Rejected records per reason (a record with two reasons counts under both)."""
        return dict(Counter(r for rej in self.rejects for r in rej.reasons).most_common())

    def summary(self) -> dict[str, Any]:
        return {"records": self.records, "queries": len(self.queries), "events": len(self.events),
                "rejected": len(self.rejects), "reject_share": round(self.reject_share, 4),
                "reasons": self.reasons(), "ignored_actions": dict(self.ignored_actions)}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _day(value: Any) -> str | None:
    """The UTC day of an ISO 8601 timestamp; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None  # UBI timestamps carry their zone; a naive one is ambiguous
    return moment.astimezone(UTC).date().isoformat()


def _position(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def query_row(obj: dict[str, Any], corpus: set[str]) -> dict[str, Any]:
    """The flat row GX checks for one query record (null where a field is missing or mistyped)."""
    hits = obj.get("query_response_hit_ids")
    hits = hits if isinstance(hits, list) and hits and all(_text(h) for h in hits) else None
    return {
        "query_id": _text(obj.get("query_id")),
        "client_id": _text(obj.get("client_id")),
        "user_query": _text(obj.get("user_query")),
        "ts_day": _day(obj.get("timestamp")),
        "depth": len(hits) if hits else None,
        "hits_known": None if hits is None else all(h in corpus for h in hits),
    }


def event_row(obj: dict[str, Any], corpus: set[str], shown: dict[str, list[str]]) -> dict[str, Any]:
    """The flat row GX checks for one impression or click (its query looked up among `shown`)."""
    attrs = obj.get("event_attributes") if isinstance(obj.get("event_attributes"), dict) else {}
    target = attrs.get("object") if isinstance(attrs.get("object"), dict) else {}
    position = attrs.get("position") if isinstance(attrs.get("position"), dict) else {}
    query_id, object_id = _text(obj.get("query_id")), _text(target.get("object_id"))
    ordinal = _position(position.get("ordinal"))
    hits = shown.get(query_id) if query_id else None
    return {
        "action_name": obj.get("action_name"),
        "query_id": query_id,
        "client_id": _text(obj.get("client_id")),
        "ts_day": _day(obj.get("timestamp")),
        "object_id": object_id,
        "ordinal": ordinal,
        "query_known": None if query_id is None else hits is not None,
        "object_known": None if object_id is None else object_id in corpus,
        "depth": len(hits) if hits else None,
        # the object the query's answer showed at that ordinal is the one the event names
        "position_matches": (None if hits is None or object_id is None or ordinal is None or not 1 <= ordinal <= len(hits)
                             else hits[ordinal - 1] == object_id),
    }


def query_expectations(day: str) -> list:
    """What a valid query record of span `day` looks like."""
    import great_expectations.expectations as gxe

    return [
        *(gxe.ExpectColumnValuesToNotBeNull(column=c, description=f"schema: {c} is a non-empty string")
          for c in ("query_id", "client_id", "user_query")),
        gxe.ExpectColumnValuesToNotBeNull(column="ts_day", description="schema: timestamp is ISO 8601 with a zone"),
        gxe.ExpectColumnValuesToNotBeNull(
            column="depth", description="schema: query_response_hit_ids is a non-empty list of doc ids"),
        gxe.ExpectColumnValuesToBeInSet(column="hits_known", value_set=[True],
                                        description="every shown doc id is in the corpus"),
        gxe.ExpectColumnValuesToBeInSet(column="ts_day", value_set=[day], description=f"timestamp inside its span {day}"),
        gxe.ExpectColumnValuesToBeInSet(column="duplicate", value_set=[False], description="query_id seen before"),
    ]


def event_expectations(day: str) -> list:
    """What a valid impression or click of span `day` looks like."""
    import great_expectations.expectations as gxe

    return [
        *(gxe.ExpectColumnValuesToNotBeNull(column=c, description=f"schema: {c} is a non-empty string")
          for c in ("query_id", "client_id")),
        gxe.ExpectColumnValuesToNotBeNull(column="ts_day", description="schema: timestamp is ISO 8601 with a zone"),
        gxe.ExpectColumnValuesToNotBeNull(
            column="object_id", description="schema: event_attributes.object.object_id is a non-empty string"),
        gxe.ExpectColumnValuesToNotBeNull(
            column="ordinal", description="schema: event_attributes.position.ordinal is an integer"),
        gxe.ExpectColumnValuesToBeInSet(column="query_known", value_set=[True],
                                        description="query_id names a logged query"),
        gxe.ExpectColumnValuesToBeInSet(column="object_known", value_set=[True], description="object_id is in the corpus"),
        gxe.ExpectColumnValuesToBeBetween(column="ordinal", min_value=1, description="position is at least 1 (1-based)"),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="depth", column_B="ordinal", or_equal=True, ignore_row_if="either_value_is_missing",
            description="position within the depth the query's answer showed"),
        gxe.ExpectColumnValuesToBeInSet(column="position_matches", value_set=[True],
                                        description="the object was shown at that position"),
        gxe.ExpectColumnValuesToBeInSet(column="ts_day", value_set=[day], description=f"timestamp inside its span {day}"),
        gxe.ExpectColumnValuesToBeInSet(column="duplicate", value_set=[False], description="the same event seen before"),
    ]


def _failed_rows(session: Any, name: str, frame: pd.DataFrame, expectations: list) -> dict[int, list[str]]:
    """{row: [description of each expectation the row fails]} from one GX validation of `frame`."""
    import great_expectations as gx

    context = session.context
    source = context.data_sources.add_pandas(name)
    batch = source.add_dataframe_asset(name).add_batch_definition_whole_dataframe("whole")
    suite = context.suites.add(gx.ExpectationSuite(name=name))
    for exp in expectations:
        suite.add_expectation(exp)
    definition = context.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch, suite=suite))
    outcome = definition.run(batch_parameters={"dataframe": frame},
                             result_format={"result_format": "COMPLETE", "unexpected_index_column_names": [ROW]})
    failed: dict[int, list[str]] = {}
    for result in outcome.results:
        if result.exception_info and result.exception_info.get("raised_exception"):
            raise RuntimeError(f"great-expectations could not run {result.expectation_config.type}: "
                               f"{result.exception_info.get('exception_message')}")
        for hit in (result.result or {}).get("unexpected_index_list") or []:
            failed.setdefault(int(hit[ROW]), []).append(result.expectation_config.description)
    return failed


def _check(session: Any, name: str, lines: list[LogLine], rows: list[dict[str, Any]], key: list[str],
           expectations: list, kind: str, out: SpanIngest) -> list[LogLine]:
    """Run `expectations` on `rows` (one per line); rejects go to `out`, the valid lines are returned."""
    if not rows:
        return []
    frame = pd.DataFrame(rows)
    frame[ROW] = range(len(frame))
    complete = frame[key].notna().all(axis=1)
    # the first copy of a record is kept, every later one rejected; incomplete keys are schema rejects already
    frame["duplicate"] = frame[key].astype(str).duplicated() & complete
    failed = _failed_rows(session, name, frame, expectations)
    kept = []
    for row, raw in enumerate(lines):
        if row in failed:
            out.rejects.append(Reject(kind, str(raw.path), raw.line, failed[row], excerpt(raw.text, quote=False)))
        else:
            kept.append(raw)
    return kept


def ingest_span(session: Any, day: str, query_lines: list[LogLine], event_lines: list[LogLine], corpus: set[str],
                shown: dict[str, list[str]]) -> SpanIngest:
    """Validate one span's query and event lines; `shown` maps the query ids of the spans read to their hits
    (an event may answer a query logged the day before) and gains this span's valid queries."""
    out = SpanIngest(day=day, records=len(query_lines) + len(event_lines))
    parsed_q = [raw for raw in query_lines if raw.record is not None]
    out.rejects += [Reject("query", str(r.path), r.line, [NOT_JSON], excerpt(r.text, quote=False))
                    for r in query_lines if r.record is None]
    rows = [query_row(raw.record, corpus) for raw in parsed_q]
    for raw in _check(session, f"ubi_queries_{day}", parsed_q, rows, ["query_id"], query_expectations(day), "query", out):
        out.queries.append(raw.record)
        shown[raw.record["query_id"]] = list(raw.record["query_response_hit_ids"])

    out.rejects += [Reject("event", str(r.path), r.line, [NOT_JSON], excerpt(r.text, quote=False))
                    for r in event_lines if r.record is None]
    parsed_e = []
    for raw in (r for r in event_lines if r.record is not None):
        action = raw.record.get("action_name")
        if action in ACTIONS:
            parsed_e.append(raw)
        else:
            out.ignored_actions[str(action)] += 1
    rows = [event_row(raw.record, corpus, shown) for raw in parsed_e]
    for raw, row in zip(parsed_e, rows, strict=True):
        row["timestamp"] = str(raw.record.get("timestamp"))  # the exact instant: two clicks on one hit differ by it
    key = ["action_name", "query_id", "client_id", "object_id", "ordinal", "ts_day", "timestamp"]
    kept = _check(session, f"ubi_events_{day}", parsed_e, rows, key, event_expectations(day), "event", out)
    out.events = [raw.record for raw in kept]
    out.records -= sum(out.ignored_actions.values())  # set aside, not judged: they do not count in the share
    return out
