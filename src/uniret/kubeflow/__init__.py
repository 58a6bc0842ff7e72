"""Kubeflow Pipelines: what components run, task settings, local runs, submit and schedule."""
