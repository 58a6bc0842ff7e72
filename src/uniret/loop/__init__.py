"""The N-night learning loop in simulation (`uniret loop`): it drives the stages, so it sits with the entry points.

- `nights`: one arm's nights: simulated traffic on the real server, the nightly's stages, promotion.
- `report`: results/loop/: the arms night by night, the paired intervals, the propensities, the plot.
"""
