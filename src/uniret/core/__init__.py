"""The bottom layer every package may use: shared error types, TREC run files, JSON reading with
file/line errors, the stage names of the DAG and the metric-name vocabulary.

It imports nothing of uniret but uniret.utils.
"""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "STAGES": "dag",
    "CheckpointError": "errors",
    "ConfigError": "errors",
    "DataError": "errors",
    "DataProblem": "errors",
    "FetchError": "errors",
    "format_error": "errors",
    "is_user_error": "errors",
    "StageFailed": "errors",
    "read_json": "jsonio",
    "read_optional_json": "jsonio",
    "MetricSpec": "metric_names",
    "parse_metric": "metric_names",
    "ranked": "runs",
    "read_run": "runs",
    "Run": "runs",
    "write_run": "runs",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
