"""The bottom layer every package may use: shared error types, TREC run files, JSON reading with
file/line errors, the stage names of the DAG and the metric-name vocabulary.

It imports nothing of uniret but uniret.utils; import the submodules (`uniret.core.errors`, ...).
"""

__all__ = ["dag", "errors", "jsonio", "metric_names", "runs"]
