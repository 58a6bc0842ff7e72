"""Kubeflow pipelines of uniret (compiled YAML committed beside their source)."""
