"""Intervention harvesting on a loop arm's logs: across rankers (successive bundles), within each ranker
(RandPair's swaps only, E68) and within each day (any two lists shown the same day, E79), beside the
simulator's propensities.

A bundle trained on the previous day's clicks moves documents because of those clicks, so a document's
CTR compared across two bundles carries the winner's curse; a RandPair swap or a canary's interleaving is
drawn independently of the clicks, and every list of one day comes from bundles trained on earlier days.
Reads the UBI spans of the given days (the feedback stage's training window). `weight` is the harvest's
total weight (harmonic pair counts): how much comparison each rule reads. `--bootstrap N` adds, for the
within-days rule, the 95% interval per rank over N resamples of the query texts
(uniret.clicks.harvest_intervals, as the feedback stage computes it): how precise the logs make it.

Usage: python lab/harvest_across_rankers.py LOG_DIR DAY [DAY ...] [--bootstrap 0] [--out lab/results/harvest_across_rankers.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from uniret.clicks.harvest import harvest_propensities, summed_harvest
from uniret.clicks.harvest_intervals import propensity_intervals
from uniret.clicks.protocol import ClickProtocol
from uniret.clicks.sessions import sessions_from_ubi
from uniret.ubi import EVENTS, QUERIES
from uniret.utils.files import atomic_write_json


def _records(log_dir: Path, kind: str, days: list[str]):
    for day in days:
        for f in sorted((log_dir / kind / day).glob("*.jsonl")):
            yield from (json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log_dir", type=Path)
    parser.add_argument("days", nargs="+")
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--bootstrap", type=int, default=0, help="resamples for the within-days interval (0: none)")
    parser.add_argument("--out", type=Path, default=Path("lab/results/harvest_across_rankers.json"))
    args = parser.parse_args(argv)
    sessions = sessions_from_ubi(list(_records(args.log_dir, QUERIES, args.days)),
                                 list(_records(args.log_dir, EVENTS, args.days))).sessions
    truth = ClickProtocol().relative_examination(args.depth)
    result = {"days": args.days, "impressions": len(sessions), "rankers": sessions.rankers(),
              "simulator": [round(float(t), 4) for t in truth]}
    for name, within in (("across_rankers", "all"), ("within_rankers", "ranker"), ("within_days", "day")):
        est = np.array(harvest_propensities(sessions, args.depth, within=within).relative)
        err = np.abs(est - truth)
        groups = [sessions] if within == "all" else list(sessions.groups(within).values())
        weight = float(summed_harvest([g.counts(args.depth) for g in groups], "harmonic")[1].weight.sum())
        known = err[1:][~np.isnan(err[1:])]  # ranks 2-10 the rule identifies
        mean = round(float(known.mean()), 4) if len(known) else None
        result[name] = {"relative": [None if np.isnan(v) else round(float(v), 4) for v in est],
                        "max_abs_error": round(float(np.nanmax(err)), 4), "mean_abs_error_2_10": mean,
                        "weight": round(weight, 1)}
        print(f"{name:>15}: {np.round(est, 3)}  largest error {np.nanmax(err):.3f}, mean {mean}, weight {weight:.0f}")
    print(f"{'simulator':>15}: {np.round(truth, 3)}")
    if args.bootstrap:
        iv = propensity_intervals(sessions, args.depth, "day", args.bootstrap)
        result["within_days"]["bootstrap"] = boot = {
            "rounds": iv.rounds, "low": [round(v, 4) for v in iv.low], "high": [round(v, 4) for v in iv.high],
            "half_width_max": round(iv.half_width_max(), 4),
            "truth_inside": [bool(lo <= t <= hi) for lo, t, hi in zip(iv.low, truth, iv.high, strict=True)]}
        print(f"{'95% low':>15}: {np.round(boot['low'], 3)}\n{'95% high':>15}: {np.round(boot['high'], 3)}  "
              f"largest half-width {boot['half_width_max']:.3f}")
    atomic_write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
