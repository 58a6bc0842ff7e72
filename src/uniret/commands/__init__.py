"""Operational CLI commands (not DAG stages): data, params, serve, bench, pipeline, ...

Each module defines `add_parser(subparsers)`; uniret.cli.COMMAND_MODULES lists them.
"""

__all__ = [
    "bench_cmd",
    "data_cmd",
    "evaluate_cmd",
    "export_cmd",
    "nightly_cmd",
    "params_cmd",
    "pipeline_cmd",
    "recipes_cmd",
    "registry_cmd",
    "results_cmd",
    "serve_cmd",
    "significance_cmd",
]
