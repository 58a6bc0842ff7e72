"""Evaluation: pytrec_eval metrics, the BEIR runner, the promotion gate, report plots."""
