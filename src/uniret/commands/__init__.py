"""Operational CLI commands (not DAG stages): data, params, serve, bench, pipeline, ..."""
