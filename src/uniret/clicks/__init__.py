"""Click models for learning from serving logs (issue 56): pure numpy/scipy, no I/O.

- `protocol`: the unbiased-learning-to-rank simulation protocol (ULTRA's position-based clicks).
- `sessions`: impressions and clicks as the estimators read them, joined from UBI records.
- `propensity`: propensities relative to rank 1 and what identifies them.
- `pbm`: the position-based click model fitted by EM.
- `harvest`: intervention harvesting (AllPairs) across rankers.
- `randpair`: a seeded swap of adjacent results on a share of answers.
- `judgments`: COEC and click-model relevance; `pairs`: IPS-weighted and naive training positives.
- `synthetic`: seeded synthetic logs with known propensities (tests, lab).
Positions are 1-based everywhere (1 = top hit).
"""
