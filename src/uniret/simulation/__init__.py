"""Simulated traffic for the learning loop: a Zipf-like stream of a labelled folder's queries sent to the
real HTTP server, with impressions and clicks drawn from the unbiased-learning-to-rank click protocol
(protocol) on that folder's qrels (traffic: the query stream; driver: the HTTP sessions)."""
