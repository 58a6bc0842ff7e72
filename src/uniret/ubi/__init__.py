"""Serving logs in the UBI 1.3.0 shape (notes: docs/learning-loop.md, "Logging").

Records and their checks (`records`), the day-partitioned layout on disk (`layout`), the bounded
background writer serving uses (`writer`), retention (`retention`) and forgetting a client (`forget`).
Positions are 1-based: ordinal 1 is the top hit.
"""

from uniret.ubi.forget import Forgotten, forget_client
from uniret.ubi.layout import EVENTS, KINDS, QUERIES, LogLine, closed_days, iter_records, list_days, span_dir
from uniret.ubi.records import (
    APPLICATION,
    OBJECT_ID_FIELD,
    RecordError,
    query_record,
    utc_timestamp,
    validate_event,
    validate_query_record,
)
from uniret.ubi.retention import delete_expired
from uniret.ubi.writer import DROP_CAUSES, LogWriter, default_writer_id

__all__ = [
    "APPLICATION", "DROP_CAUSES", "EVENTS", "KINDS", "OBJECT_ID_FIELD", "QUERIES", "Forgotten", "LogLine", "LogWriter",
    "RecordError", "closed_days", "default_writer_id", "delete_expired", "forget_client", "iter_records", "list_days",
    "query_record", "span_dir", "utc_timestamp", "validate_event", "validate_query_record",
]
