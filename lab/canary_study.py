"""E69: how many impressions an interleaving canary needs, and how often it decides right, beside an A/B test.

Candidates of known true quality against production: each bundle's served mode ranks the traffic
split's judged queries once (the real searchers, top 10); simulated users then see, per impression,
either the team-draft interleaving of the two lists (the canary; uniret.interleaving.team_draft, every
coin-flip sequence enumerated so impressions can be drawn in bulk) or one arm's list (the A/B test,
half the traffic each), and click by the simulator's protocol (uniret.clicks.protocol, ULTRA's PBM) on
the qrels grades. Queries come from `uniret simulate`'s Zipf-like stream (uniret.simulation.traffic).

Two measurements:
  1. the target: `--reps` canaries per pair, each decided by uniret.interleaving.decide at the
     configured canary.min_impressions clicked impressions (the rule and alpha of params canary);
  2. the curve: `--curve-reps` repetitions per pair and per traffic size, for both methods, under the
     same rule and alpha (A/B: clicks per impression, a one-sided z-test on the difference of means);
     the traffic each needs before the worse candidate is rolled back in 95% of them, and the ratio
     (its spread: the curve's repetitions resampled).

    python lab/canary_study.py --pair better=BUNDLE_P:BUNDLE_C --pair worse=... --pair equal=B:B \
        --data ../shared/data --out results/canary
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from uniret.clicks.protocol import ClickProtocol
from uniret.config import load_params
from uniret.data.beir import BeirDataset, read_qrels
from uniret.evaluation.graded import graded_ndcg
from uniret.evaluation.significance import paired_bootstrap
from uniret.interleaving import credit, decide, preference, team_draft
from uniret.interleaving.decision import mean_interval, one_sided_z
from uniret.serving.source import bundle_loader
from uniret.serving.state import bundle_serve_mode, close_searchers, search_one
from uniret.simulation.traffic import zipf_order, zipf_stream

DEPTH = 10
FLIPS = 5  # team draft flips a coin when both teams have as many picks: at most ceil(DEPTH / 2) times


class Bits:
    """A stand-in for random.Random that replays one coin-flip sequence (bit 1: the candidate picks)."""

    def __init__(self, bits: int):
        self.bits, self.i = bits, 0

    def random(self) -> float:
        bit = (self.bits >> self.i) & 1
        self.i += 1
        return 0.9 if bit else 0.1


def rankings(bundle: Path, texts: dict[str, str]) -> dict[str, list[str]]:
    """The served mode's top DEPTH of every query."""
    searchers = bundle_loader(None)(bundle)
    mode = bundle_serve_mode(bundle)
    try:
        out = {}
        for qid, text in texts.items():
            hits = search_one(searchers[mode], qid, text, DEPTH).get(qid, {})
            out[qid] = [d for d, _ in sorted(hits.items(), key=lambda x: (-x[1], x[0]))][:DEPTH]
        return out
    finally:
        close_searchers(searchers)


def tables(prod: dict[str, list[str]], cand: dict[str, list[str]], queries: list[str], qrels) -> dict[str, np.ndarray]:
    """Grades shown per (query, coin-flip sequence) with the candidate's team marked; and per (arm, query)."""
    n, f = len(queries), 2 ** FLIPS
    inter_g = np.full((n, f, DEPTH), -1, dtype=np.int64)  # -1: nothing shown there
    inter_c = np.zeros((n, f, DEPTH), dtype=bool)
    ab_g = np.full((2, n, DEPTH), -1, dtype=np.int64)
    for i, q in enumerate(queries):
        for bits in range(f):
            mixed = team_draft(prod[q], cand[q], DEPTH, Bits(bits))
            for r, (doc, team) in enumerate(zip(mixed.docs, mixed.teams, strict=True)):
                inter_g[i, bits, r] = qrels[q].get(doc, 0)
                inter_c[i, bits, r] = team == "c"
        for arm, lists in enumerate((prod, cand)):
            for r, doc in enumerate(lists[q]):
                ab_g[arm, i, r] = qrels[q].get(doc, 0)
    return {"inter_g": inter_g, "inter_c": inter_c, "ab_g": ab_g}


def clicks(protocol: ClickProtocol, grades: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    p = protocol.examination_curve(DEPTH)[None, :] * protocol.click_probabilities(np.maximum(grades, 0))
    return (rng.random(grades.shape) < p) & (grades >= 0)


def stream(queries: list[str], exponent: float, order_seed: int, seed: int, n: int) -> np.ndarray:
    """n draws of one traffic (its head fixed by `order_seed`) as indices into `queries`."""
    index = {q: i for i, q in enumerate(queries)}
    draws = zipf_stream(queries, exponent, seed, order_seed=order_seed)
    return np.fromiter((index[q] for q in itertools.islice(draws, n)), np.int64, n)


def interleaved_run(t: dict, protocol: ClickProtocol, qseq: np.ndarray, rng: np.random.Generator):
    """Per impression: (candidate clicks, production clicks)."""
    flips = rng.integers(0, 2 ** FLIPS, len(qseq))
    g, c = t["inter_g"][qseq, flips], t["inter_c"][qseq, flips]
    k = clicks(protocol, g, rng)
    return (k & c).sum(1), (k & ~c).sum(1)


def rollback_interleaving(cand_clicks, prod_clicks, n: int, z: float, rule: str) -> bool:
    """The rule on the first n impressions (the statistic of uniret.interleaving.preference)."""
    s = np.sign(cand_clicks[:n] - prod_clicks[:n])[(cand_clicks[:n] + prod_clicks[:n]) > 0]
    _, low, high = mean_interval(float(s.sum()), float((s * s).sum()), len(s), z)
    return (high < 0) if rule == "non_inferior" else not (low > 0)


def rollback_ab(arms, metric, n: int, z: float, rule: str) -> bool:
    a, m = arms[:n], metric[:n]
    c, p = m[a == 1], m[a == 0]
    if len(c) < 2 or len(p) < 2:
        return rule != "non_inferior"
    delta = c.mean() - p.mean()
    se = math.sqrt(c.var(ddof=1) / len(c) + p.var(ddof=1) / len(p)) or math.inf
    return (delta + z * se < 0) if rule == "non_inferior" else not (delta - z * se > 0)  # Welch-style z


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", action="append", required=True, help="NAME=PRODUCTION_BUNDLE:CANDIDATE_BUNDLE")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--dataset", default="nfcorpus")
    ap.add_argument("--split", default="dev", help="traffic queries (never the test split; test is reported)")
    ap.add_argument("--params", default="params.yaml")
    # 0: every query as likely, so the canary weighs queries as nDCG's mean does (the targets' truth); the
    # loop's 1.0 makes one query a sixth of the traffic and the canary answers about that traffic (E69)
    ap.add_argument("--zipf-exponent", type=float, default=0.0)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--loss", type=float, default=0.01, help="pairs losing this much nDCG@10 get the traffic needed")
    ap.add_argument("--curve-reps", type=int, default=200)
    ap.add_argument("--grid", default="250,500,1000,2000,3000,4000,5000,6000,7000,8000,10000,12000,16000,20000,24000,28000,32000,40000,48000,64000")
    ap.add_argument("--out", default="results/canary")
    ap.add_argument("--render", action="store_true", help="only rewrite canary.md and canary.png from canary.json")
    args = ap.parse_args()
    if args.render:
        report = json.loads((Path(args.out) / "canary.json").read_text())
        write_markdown(report, Path(args.out) / "canary.md", report.get("argv", ""))
        plot(report, Path(args.out) / "canary.png")
        return
    began = time.time()
    params = load_params(args.params, None)
    canary, sim = params.section("canary"), params.section("simulate")
    z = one_sided_z(canary.alpha)
    folder = BeirDataset(Path(args.data) / args.dataset)
    texts = folder.queries()
    qrels = {s: read_qrels(folder.qrels_path(s)) for s in (args.split, "test")}
    traffic = sorted(q for q in qrels[args.split] if q in texts and any(v > 0 for v in qrels[args.split][q].values()))
    top = max(max(v.values()) for v in qrels[args.split].values())
    protocol = ClickProtocol(eta=sim.eta, click_noise=sim.click_noise, click_max=sim.click_max, max_grade=max(1, top))
    order, shares = zipf_order(traffic, args.zipf_exponent, sim.seed)
    share = dict(zip(order, shares, strict=True))
    pairs = {}
    for spec in args.pair:
        name, _, rest = spec.partition("=")
        prod, _, cand = rest.partition(":")
        pairs[name] = (Path(prod), Path(cand))
    ranked: dict[Path, dict[str, list[str]]] = {}
    wanted = {q: texts[q] for s in qrels for q in qrels[s] if q in texts}
    for bundle in {b for pair in pairs.values() for b in pair}:
        t = time.time()
        ranked[bundle] = rankings(bundle, wanted)
        print(f"ranked {len(wanted)} queries with {bundle.name} in {time.time() - t:.0f} s", flush=True)
    grid = [int(x) for x in args.grid.split(",")]
    report: dict = {"assumptions": {
        "traffic": f"{args.dataset} {args.split} judged queries ({len(traffic)}), Zipf exponent {args.zipf_exponent}, "
                   f"head fixed by seed {sim.seed}; each repetition a new sample of it",
        "click_protocol": protocol.to_json(), "depth": DEPTH, "rule": canary.rule, "alpha": canary.alpha, "split": args.split,
        "min_impressions": canary.min_impressions, "share": "every simulated impression is interleaved (a share below 1 only stretches the time; "
        "the A/B test splits its impressions 50/50)",
        "ab_metric": "clicks per impression, one-sided z-test on the difference of the arms' means",
        "interleaving_statistic": "team draft; per clicked impression +1/-1/0, their mean and its z interval",
    }, "pairs": {}}
    for name, (prod_b, cand_b) in pairs.items():
        prod, cand = ranked[prod_b], ranked[cand_b]
        truth = {}
        for split, rel in qrels.items():
            a = graded_ndcg(rel, {q: {d: -r for r, d in enumerate(prod[q])} for q in rel if q in prod}, DEPTH)
            b = graded_ndcg(rel, {q: {d: -r for r, d in enumerate(cand[q])} for q in rel if q in cand}, DEPTH)
            keys = sorted(a)
            comp = paired_bootstrap({split: ([a[q] for q in keys], [b[q] for q in keys])}, resamples=5000)
            if split == args.split:  # what the canary measures: the difference as the traffic weighs its queries
                truth["traffic_weighted"] = {"diff": round(sum(share[q] * (b[q] - a[q]) for q in traffic), 4),
                                             "head_query_share": round(max(share.values()), 4)}
            truth[split] = {"production": round(float(np.mean([a[q] for q in keys])), 4),
                            "candidate": round(float(np.mean([b[q] for q in keys])), 4),
                            "diff": round(comp.diff, 4), "low": round(comp.ci_low, 4), "high": round(comp.ci_high, 4)}
        t = tables(prod, cand, traffic, qrels[args.split])
        # 1. the target: the canary as configured, decided by the product's own code
        decisions = []
        for rep in range(args.reps):
            rng = np.random.default_rng(rep)
            qseq = stream(traffic, args.zipf_exponent, sim.seed, rep, 40 * canary.min_impressions)
            cc, pc = interleaved_run(t, protocol, qseq, rng)
            outcomes, clicked = [], 0
            for q, c, p in zip(qseq, cc, pc, strict=True):
                outcomes.append(credit(traffic[q], "c" * int(c) + "p" * int(p), range(1, int(c + p) + 1)))
                clicked += (c + p) > 0
                if clicked >= canary.min_impressions:
                    break
            verdict = decide(preference(outcomes, canary.alpha), canary.rule, canary.min_impressions, expired=True)
            decisions.append({"action": verdict.action, "impressions": len(outcomes),
                              "delta": round(verdict.preference.delta, 4)})
        # 2. the curve, both methods, fresh seeds
        inter_rb = np.zeros((args.curve_reps, len(grid)), dtype=bool)
        ab_rb = np.zeros_like(inter_rb)
        clicked_share = []
        for rep in range(args.curve_reps):
            rng = np.random.default_rng(10_000 + rep)
            qseq = stream(traffic, args.zipf_exponent, sim.seed, 10_000 + rep, grid[-1])
            cc, pc = interleaved_run(t, protocol, qseq, rng)
            clicked_share.append(float(((cc + pc) > 0).mean()))
            arms = rng.integers(0, 2, grid[-1])
            metric = clicks(protocol, t["ab_g"][arms, qseq], rng).sum(1)
            for j, n in enumerate(grid):
                inter_rb[rep, j] = rollback_interleaving(cc, pc, n, z, canary.rule)
                ab_rb[rep, j] = rollback_ab(arms, metric, n, z, canary.rule)
        report["pairs"][name] = {
            "production": prod_b.name, "candidate": cand_b.name, "truth_ndcg@10": truth,
            "target": {"reps": args.reps, "promoted": sum(d["action"] == "promote" for d in decisions),
                       "rolled_back": sum(d["action"] == "rollback" for d in decisions), "decisions": decisions},
            "curve": {"impressions": grid, "reps": args.curve_reps,
                      "clicked_share": round(float(np.mean(clicked_share)), 4),
                      "interleaving_rollback_rate": inter_rb.mean(0).round(4).tolist(),
                      "ab_rollback_rate": ab_rb.mean(0).round(4).tolist()},
            "_curves": (inter_rb, ab_rb),
        }
        print(f"{name}: truth {truth}; target {report['pairs'][name]['target']['promoted']} promoted of {args.reps}",
              flush=True)
    needed = needed_traffic(report, grid, args.loss)
    report["needed"] = needed
    for pair in report["pairs"].values():
        pair.pop("_curves")
    report["seconds"] = round(time.time() - began, 1)
    report["argv"] = " ".join(a for a in sys.argv[1:] if a != "--render")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "canary.json").write_text(json.dumps(report, indent=2))
    write_markdown(report, out / "canary.md", report["argv"])
    plot(report, out / "canary.png")
    print(json.dumps(needed, indent=2))


def write_markdown(report: dict, path: Path, argv: str) -> None:
    """The report's tables (figures from canary.json)."""
    a = report["assumptions"]
    lines = ["# The interleaving canary: decisions and the traffic they need (E69)", "",
             f"Traffic: {a['traffic']}. Clicks: {a['click_protocol']['model']}, eta {a['click_protocol']['eta']}, "
             f"e- {a['click_protocol']['click_noise']}, e+ {a['click_protocol']['click_max']}, depth {a['depth']}. "
             f"Rule {a['rule']}, one-sided alpha {a['alpha']}, decided at {a['min_impressions']} clicked "
             f"interleaved impressions. Share: {a['share']}. Bundles (the loop's, results/loop/): "
             + "; ".join(f"{n}: production {p['production']}, candidate {p['candidate']}"
                         for n, p in report["pairs"].items()) + ".", "",
             "| pair | nDCG@10 diff as the traffic weighs queries | dev, every query once (95%) | test (95%) | "
             "canaries | promoted | rolled back |", "|---|---|---|---|---|---|---|"]
    for name, p in report["pairs"].items():
        t = p["truth_ndcg@10"]
        dev, test = t[a["split"]], t["test"]
        lines.append(f"| {name} | {t['traffic_weighted']['diff']:+.4f} | {dev['diff']:+.4f} ({dev['low']:+.4f} .. "
                     f"{dev['high']:+.4f}) | {test['diff']:+.4f} ({test['low']:+.4f} .. {test['high']:+.4f}) | "
                     f"{p['target']['reps']} | {p['target']['promoted']} | {p['target']['rolled_back']} |")
    lines += ["", "Traffic each method needs before the worse candidate is rolled back in 95% of "
              f"{next(iter(report['pairs'].values()))['curve']['reps']} repetitions (same rule and alpha; "
              f"A/B: {a['ab_metric']}):", ""]
    if report["needed"]:
        lines += ["| pair | interleaving | A/B | A/B / interleaving (95% interval) |", "|---|---|---|---|"]
        for name, n in report["needed"].items():
            lines.append(f"| {name} | {n['interleaving']:,.0f} | {n['ab']:,.0f} | {n['ratio']:.1f} "
                         f"({n['ratio_low']:.1f} .. {n['ratio_high']:.1f}) |")
    else:
        lines.append("none: no pair loses 0.01 nDCG@10 as this traffic weighs its queries.")
    serving = path.parent / "serving.json"
    if serving.is_file():  # lab/canary_serving.py's figures, when they were written beside this report
        sv = json.loads(serving.read_text())
        lat, e2e = sv["latency_ms"], sv["end_to_end"]
        pref = e2e["decision"]["preference"] if isinstance(e2e["decision"], dict) else {}
        lines += ["", f"On the real server ({sv['machine']}, `python lab/canary_serving.py`, serving.json): RSS "
                  f"{sv['rss_mb_production']:.0f} MB with production alone, {sv['rss_mb_with_candidate']:.0f} MB with "
                  f"the candidate beside it; p50 {lat['interleaved']['p50']:.2f} ms for an interleaved search against "
                  f"{lat['plain']['p50']:.2f} ms for a plain one ({sv['p50_ratio']:.2f}x; p95 "
                  f"{lat['interleaved']['p95']:.2f} / {lat['plain']['p95']:.2f}; {lat['interleaved']['requests']} and "
                  f"{lat['plain']['requests']} requests of one run at share 0.5, one client). End to end: "
                  f"`uniret simulate` ({e2e['sessions']} sessions of the {e2e['split']} queries, its Zipf stream) "
                  f"against a canary at share {e2e['share']}, then `uniret canary decide`: "
                  f"{e2e['decision']['status'] if pref else e2e['decision']} (delta {pref.get('delta', 0):+.4f} over "
                  f"{pref.get('clicked')} clicked impressions of {e2e['decision']['production'] if pref else ''} "
                  "against the better candidate; on that Zipf stream the pair's gap is the one of zipf1/canary.md)."]
    if (path.parent / "zipf1" / "canary.md").is_file():
        lines += ["", "The same canaries on the loop's Zipf stream (one query a sixth of the traffic), where the "
                  "clicks disagree with nDCG@10 for this pair: [zipf1/canary.md](zipf1/canary.md)."]
    lines += ["", "![rollback rate by traffic](canary.png)", "",
              f"Reproduce: `python lab/canary_study.py {argv}` ({report['seconds']:.0f} s).", ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def plot(report: dict, path: Path) -> None:
    """Rollback rate against traffic, per pair and method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for (name, p), color in zip(report["pairs"].items(), ("tab:green", "tab:red", "tab:gray", "tab:blue"),
                                strict=False):
        c = p["curve"]
        ax.plot(c["impressions"], c["interleaving_rollback_rate"], "-o", color=color, ms=3,
                label=f"{name}: interleaving")
        ax.plot(c["impressions"], c["ab_rollback_rate"], "--s", color=color, ms=3, label=f"{name}: A/B")
    ax.axhline(0.95, color="k", lw=0.5)
    ax.axhline(report["assumptions"]["alpha"], color="k", lw=0.5, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("impressions (interleaved, or both A/B arms together)")
    ax.set_ylabel("share of repetitions rolled back")
    ax.set_title(f"Canary rollback rate by traffic ({report['assumptions']['traffic'].split(',')[0]}, Zipf "
                 f"{report['assumptions']['traffic'].split('Zipf exponent ')[1].split(',')[0]})", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def needed_traffic(report: dict, grid: list[int], loss: float, level: float = 0.95, resamples: int = 2000) -> dict:
    """Per pair whose candidate loses at least `loss` nDCG@10 on the traffic: the smallest traffic at which each method rolls it back in `level`
    of the repetitions, and the A/B / interleaving ratio with a 95% interval over resampled repetitions."""
    rng = np.random.default_rng(0)
    out = {}
    for name, pair in report["pairs"].items():
        if pair["truth_ndcg@10"]["traffic_weighted"]["diff"] > -loss:
            continue
        inter, ab = pair["_curves"]

        def first(rates: np.ndarray) -> float:
            ok = np.flatnonzero(rates >= level)
            return float(grid[ok[0]]) if len(ok) else math.nan

        n_i, n_a = first(inter.mean(0)), first(ab.mean(0))
        ratios = []
        for _ in range(resamples):
            pick = rng.integers(0, len(inter), len(inter))
            ratios.append(first(ab[pick].mean(0)) / first(inter[pick].mean(0)))
        ratios = np.array(ratios)
        finite = ratios[np.isfinite(ratios)]
        out[name] = {"interleaving": n_i, "ab": n_a, "ratio": n_a / n_i if n_i else math.nan,
                     "ratio_low": float(np.quantile(finite, 0.025)) if len(finite) else None,
                     "ratio_high": float(np.quantile(finite, 0.975)) if len(finite) else None,
                     "resamples_beyond_grid": int(len(ratios) - len(finite))}
    return out


if __name__ == "__main__":
    main()
