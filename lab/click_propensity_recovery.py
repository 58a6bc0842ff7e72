"""What identifies the examination propensities in click logs: one ranker, successive rankers, RandPair swaps.

Usage: python lab/click_propensity_recovery.py [--queries 1000] [--candidates 30] [--sessions 3000 15000]
       [--seeds 3] [--shares 0.05 0.1 0.2] [--em-iterations 1000] [--out lab/results/click_propensity_recovery.json]

Seeded synthetic logs (uniret.clicks.synthetic): `--queries` queries, each with `--candidates` documents
of grade 0/1/2 (shares 0.7/0.2/0.1), Zipf traffic (exponent 1, as `simulate.zipf_exponent`), depth 10,
clicks from ULTRA's protocol (eta 1, e- 0.1, e+ 1.0). Rankers order each pool by grade + noise; several
rankers share 80% of their noise (successive bundles: similar quality, orderings that differ), each
session drawn by one of them at random. Scenarios: 1 ranker; 2 and 3 rankers; 1 ranker with RandPair
on each `--shares`, swapping neighbours (`adjacent`) or rank 1 with another (`top`); 1 and 3 sharp rankers (noise 0.3 instead of 1.0: the grade-2
documents sit at the top, and deep ranks never show one); 3 rankers that share 95% of their noise. Per scenario, volume (`--sessions`) and seed: the position-based
model fitted by EM (`uniret.clicks.pbm.fit_pbm`) and intervention harvesting (AllPairs, both weightings),
each reported relative to rank 1 beside the simulator's curve, with the largest error at ranks 1-10
and the ranks the logs identify. RandPair's cost: the mean nDCG@10 the swapped lists lose against the
ranker's own, over the sessions served. No timing is taken; the figures do not depend on the machine.
"""

from __future__ import annotations

import argparse
import random
import sys

import numpy as np


def _summary(estimates: list[np.ndarray], identified: list[tuple[bool, ...]], truth: np.ndarray) -> dict:
    """Mean estimate per rank over seeds, and the largest |error| at ranks 1-10 per seed (NaN: not identified)."""
    stack = np.vstack(estimates)
    errors = np.abs(stack - truth).max(axis=1)
    means = [None if np.isnan(col).all() else round(float(np.nanmean(col)), 4) for col in stack.T]
    return {
        "relative_mean": means,
        "max_error_per_seed": [None if np.isnan(e) else round(float(e), 4) for e in errors],
        "max_error_worst": None if np.isnan(errors).any() else round(float(errors.max()), 4),
        "identified_ranks_min": int(min(sum(ids) for ids in identified)),
        "within_0_05": bool(not np.isnan(errors).any() and errors.max() < 0.05),
    }


def _randpair_cost(collection, orderings, share: float, kind: str, sessions: int, seed: int) -> tuple[float, float]:
    """(mean nDCG@10 lost by RandPair's swaps, mean nDCG@10 without them) over `sessions` Zipf-drawn answers
    of the first ranker."""
    from uniret.clicks.randpair import rand_pair
    from uniret.clicks.synthetic import ndcg, zipf_queries

    rng = np.random.default_rng(seed)
    queries = zipf_queries(collection.queries, sessions, rng)
    shown = orderings[0, queries, :10]
    swapped = shown.copy()
    swap_rng = random.Random(seed)
    for s in range(sessions):
        swapped[s] = rand_pair(shown[s], share, swap_rng, 10, kind)[0]
    pools = collection.grades[queries]
    before = ndcg(np.take_along_axis(pools, shown, axis=1), pools, 10)
    after = ndcg(np.take_along_axis(pools, swapped, axis=1), pools, 10)
    return float(np.mean(before - after)), float(np.mean(before))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--sessions", type=int, nargs="+", default=[3000, 15000])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    parser.add_argument("--em-iterations", type=int, default=1000)
    parser.add_argument("--out", default="lab/results/click_propensity_recovery.json")
    args = parser.parse_args(argv)

    from uniret.clicks.harvest import harvest_propensities
    from uniret.clicks.pbm import fit_pbm
    from uniret.clicks.protocol import ClickProtocol
    from uniret.clicks.synthetic import make_collection, make_rankers, simulate
    from uniret.utils.files import atomic_write_json

    depth = 10
    protocol = ClickProtocol(eta=1.0, click_noise=0.1, click_max=1.0, max_grade=2)
    truth = protocol.relative_examination(depth)
    # (name, rankers, RandPair share and kind, ranker noise, agreement): noise 1.0 mixes grades down the
    # list, 0.3 is a sharp ranker whose top ranks hold the grade-2 documents and whose deep ranks never
    # do; agreement 0.95: rankers that share 95% of their noise (bundles that barely moved)
    scenarios = [("1 ranker", 1, 0.0, "adjacent", 1.0, 0.8), ("2 rankers", 2, 0.0, "adjacent", 1.0, 0.8),
                 ("3 rankers", 3, 0.0, "adjacent", 1.0, 0.8)]
    scenarios += [(f"1 ranker + RandPair {kind} {share:g}", 1, share, kind, 1.0, 0.8)
                  for kind in ("adjacent", "top") for share in args.shares]
    scenarios += [("1 ranker, sharp", 1, 0.0, "adjacent", 0.3, 0.8), ("3 rankers, sharp", 3, 0.0, "adjacent", 0.3, 0.8),
                  ("3 rankers, agreement 0.95", 3, 0.0, "adjacent", 1.0, 0.95)]
    results = []
    for name, rankers, share, kind, noise, agreement in scenarios:
        for sessions in args.sessions:
            per = {"em": ([], []), "harvest_harmonic": ([], []), "harvest_pairs": ([], [])}
            iterations, costs = [], []
            for seed in range(args.seeds):
                rng = np.random.default_rng(1000 * seed + rankers)
                collection = make_collection(args.queries, args.candidates, rng)
                orderings = make_rankers(collection, rankers, rng, agreement=agreement, noise=noise)
                counts = simulate(collection, orderings, protocol, sessions, depth, rng,
                                  randpair_share=share, randpair_kind=kind).counts(depth)
                fit = fit_pbm(counts, depth, args.em_iterations)
                iterations.append(fit.convergence.iterations)
                found = {"em": fit.propensities,
                         "harvest_harmonic": harvest_propensities(counts, depth, "harmonic"),
                         "harvest_pairs": harvest_propensities(counts, depth, "pairs")}
                for method, est in found.items():
                    per[method][0].append(np.asarray(est.relative))
                    per[method][1].append(est.identified)
                if share > 0:
                    costs.append(_randpair_cost(collection, orderings, share, kind, sessions, seed))
            row = {"scenario": name, "rankers": rankers, "randpair_share": share,
                   "randpair_kind": kind if share else None, "ranker_noise": noise, "ranker_agreement": agreement,
                   "sessions": sessions,
                   "seeds": args.seeds, "em_iterations": iterations,
                   **{method: _summary(est, ids, truth) for method, (est, ids) in per.items()}}
            if costs:
                row["randpair_ndcg10_loss"] = round(float(np.mean([c[0] for c in costs])), 5)
                row["ndcg10_without_swaps"] = round(float(np.mean([c[1] for c in costs])), 4)
            results.append(row)
            print(f"{name:32s} {sessions:6d} sessions: max |error| EM {row['em']['max_error_worst']}, "
                  f"harvest {row['harvest_harmonic']['max_error_worst']} (pairs weighting "
                  f"{row['harvest_pairs']['max_error_worst']}), identified ranks >= "
                  f"{row['harvest_harmonic']['identified_ranks_min']}", file=sys.stderr)
    out = {
        "command": "python lab/click_propensity_recovery.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "protocol": protocol.to_json(), "depth": depth, "truth_relative": [round(float(v), 4) for v in truth],
        "collection": {"queries": args.queries, "candidates": args.candidates, "grade_shares": [0.7, 0.2, 0.1],
                       "zipf_exponent": 1.0, "ranker_score": "grade + noise x N(0, 1), agreement: share of the noise "
                                                             "variance common to the rankers"},
        "em_iterations_max": args.em_iterations,
        "notes": "errors are |estimate - truth| of propensities relative to rank 1; max over ranks 1-10, per seed; "
                 "null where a rank is not identified",
        "results": results,
    }
    atomic_write_json(args.out, out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
