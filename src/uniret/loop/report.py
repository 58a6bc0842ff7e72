"""The loop's report: night-by-night figures of every arm, the paired intervals, the propensities, a plot.

Reads each arm's <work>/loop.json and per-night per-query scores (uniret.loop.nights) and writes
loop.json, loop.md and loop.png to the output folder (results/loop/).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from uniret.clicks.protocol import ClickProtocol
from uniret.evaluation.significance import paired_bootstrap, per_query_pairs
from uniret.loop import traffic_truth
from uniret.ubi import QUERIES

METRIC = "ndcg@10"


def _per_query(work: Path, night: int) -> dict[str, float]:
    doc = json.loads((work / "nights" / str(night) / "per_query.json").read_text())
    return {q: v[METRIC] for q, v in doc.items()}


def _interval(work_a: Path, night_a: int, work_b: Path, night_b: int, name: str) -> dict[str, Any]:
    a, b = per_query_pairs(_per_query(work_a, night_a), _per_query(work_b, night_b), name)
    cmp = paired_bootstrap({name: (a, b)})
    return {"diff": round(cmp.diff, 4), "low": round(cmp.ci_low, 4), "high": round(cmp.ci_high, 4), "queries": len(a)}


ON = "the logged answers, graded with the traffic's train qrels"


def _answers(work: Path, qrels: dict[str, dict[str, int]], texts: dict[str, str]) -> list[dict[str, Any]]:
    """Every logged answer to a judged query: its day, query, whether a canary interleaved it or RandPair
    swapped two of its results, and its nDCG@10 as shown and as ranked (the swap undone), on the traffic's
    own qrels (the simulator's grades); nDCG as the evaluate stage's graded form computes it
    (uniret.evaluation.graded). Answers whose query has no relevant document get no nDCG and are left out."""
    from uniret.evaluation.graded import graded_ndcg
    from uniret.ubi import iter_records, list_days

    by_text = {}
    for qid, text in texts.items():
        if qid in qrels:
            by_text.setdefault(text, qid)
    rows, judged = [], {}
    shown_run: dict[str, dict[str, float]] = {}
    ranked_run: dict[str, dict[str, float]] = {}
    for day in list_days(work / "logs"):
        for line in iter_records(work / "logs", QUERIES, day):
            rec = line.record or {}
            qid = by_text.get(rec.get("user_query"))
            if qid is None:
                continue
            key = str(len(judged))  # one "query" per logged answer
            attributes = rec.get("query_attributes", {})
            shown = rec["query_response_hit_ids"]
            ranked = list(shown)
            if pair := attributes.get("randpair"):
                i, j = pair[0] - 1, pair[1] - 1
                ranked[i], ranked[j] = ranked[j], ranked[i]
            judged[key] = qrels[qid]
            shown_run[key] = {d: float(len(shown) - r) for r, d in enumerate(shown)}
            ranked_run[key] = {d: float(len(ranked) - r) for r, d in enumerate(ranked)}
            rows.append({"key": key, "day": day, "query": qid, "swapped": bool(pair),
                         "interleaved": "interleaved_with" in attributes})
    shown_ndcg, ranked_ndcg = graded_ndcg(judged, shown_run, 10), graded_ndcg(judged, ranked_run, 10)
    return [{**r, "shown": shown_ndcg[r["key"]], "ranked": ranked_ndcg[r["key"]]} for r in rows if r["key"] in shown_ndcg]


def randpair_cost(answers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What RandPair's swaps cost the users: nDCG@10 of every logged answer as shown minus as ranked."""
    if not answers:
        return None
    diff = sum(a["shown"] - a["ranked"] for a in answers) / len(answers)
    return {"answers": len(answers), "swapped": sum(a["swapped"] for a in answers),
            "ndcg10_shown_minus_ranked": round(diff, 5), "on": ON}


def interleaving_cost(answers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What a canary's interleaving cost the users it served: per (day, query) answered both ways, the mean
    nDCG@10 of the interleaved answers minus that of production's own (as ranked), weighted by the
    interleaved answers. The canary's draw is random per search, so the difference is unbiased; None when
    no answer was interleaved."""
    strata: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for a in answers:
        mixed, plain = strata.setdefault((a["day"], a["query"]), ([], []))
        (mixed if a["interleaved"] else plain).append(a["shown"] if a["interleaved"] else a["ranked"])
    both = [(m, p) for m, p in strata.values() if m and p]
    interleaved = sum(len(m) for m, _ in strata.values())
    if not interleaved:
        return None
    weight = sum(len(m) for m, _ in both)
    diff = sum(len(m) * (sum(m) / len(m) - sum(p) / len(p)) for m, p in both) / weight if weight else None
    return {"interleaved": interleaved, "compared": weight, "strata": len(both),
            "ndcg10_interleaved_minus_production": None if diff is None else round(diff, 5), "on": ON}


def zero_shot_check(work: Path, night: int, domain: str, gate) -> dict[str, Any] | None:
    """The gate's paired rule on the other sets, night `night` against night 0: pooled (their macro,
    gate.pooled_margin) and per set (gate.margin). None when the nights kept no per-query scores."""
    from uniret.evaluation.noninferiority import noninferiority

    def scores(n: int) -> dict[str, dict[str, float]]:
        folder = work / "nights" / str(n) / "per_query"
        return {f.stem: {q: v[METRIC] for q, v in json.loads(f.read_text()).items()}
                for f in sorted(folder.glob("*.json")) if f.stem != domain} if folder.is_dir() else {}

    first, last = scores(0), scores(night)
    names = sorted(set(first) & set(last))
    if not names:
        return None
    sets = {n: per_query_pairs(first[n], last[n], n) for n in names}
    conf = gate.regression_confidence
    pooled = noninferiority(sets, gate.pooled_margin, conf)
    per_set = {n: noninferiority({n: sets[n]}, gate.margin(n), conf).as_dict(4) for n in names}
    return {"night": night, "sets": names, "pooled": pooled.as_dict(4),
            "per_set": per_set, "within_margins": not pooled.worse and not any(v["worse"] for v in per_set.values())}


def build(arms: dict[str, Path], eta: float = 1.0, domain: Path | None = None, gate=None) -> dict[str, Any]:
    """{arm: nights, gains with intervals}, the skyline's gain and each arm's share of it."""
    out: dict[str, Any] = {"metric": f"{METRIC} of hybrid_fast on the traffic domain's test split", "arms": {}}
    loaded = {arm: json.loads((work / "loop.json").read_text()) for arm, work in arms.items()}
    traffic = None  # the domain's train qrels and query texts, read once for every arm's RandPair cost
    if domain is not None:
        from uniret.data.beir import BeirDataset, read_qrels

        data = BeirDataset(domain)
        traffic = (read_qrels(data.qrels_path("train")), data.queries())
    for arm, doc in loaded.items():
        nights = doc["nights"]
        last = max(n["night"] for n in nights)
        entry = {"settings": doc["settings"], "profile": doc["profile"], "sessions_per_night": doc["sessions_per_night"],
                 "randpair_share": doc.get("randpair_share"), "gate": doc.get("gate"),
                 "retrain_steps": doc.get("retrain_steps") or 0,
                 "nights": [{k: n.get(k) for k in ("night", "day", "ndcg@10", "bm25_ndcg@10", "zero_shot_macro",
                                                   "wall_seconds", "stage_seconds", "finetune_queries", "version",
                                                   "retrained")}
                            | {"train_sessions": (n.get("feedback") or {}).get("train_sessions"),
                               "clicks_used": n.get("clicks_used"),
                               "newest_traffic": n.get("newest_traffic")} for n in nights]}
        if last > 0:
            entry["gain_last_vs_night0"] = _interval(arms[arm], 0, arms[arm], last, f"{arm} night {last} - night 0")
            if gate is not None and domain is not None:
                entry["zero_shot_check"] = zero_shot_check(arms[arm], last, domain.name, gate)
        props = [(n["night"], (n.get("feedback") or {}).get("propensities")) for n in nights]
        props = [(k, p) for k, p in props if p]
        if props:
            night, table = props[-1]
            truth = ClickProtocol(eta=eta).relative_examination(len(table))
            entry["propensities"] = {"night": night, "table": table, "simulator_relative": [round(float(t), 4) for t in truth],
                                     "max_abs_error": _max_error(table, truth)}
        if traffic is not None and doc["settings"].get("clicks") != "none":
            answers = _answers(arms[arm], *traffic)
            entry["randpair_cost"] = randpair_cost(answers)
            entry["interleaving_cost"] = interleaving_cost(answers)
            if gate is not None:
                entry["traffic_check"] = traffic_check(arms[arm], nights, traffic, gate)
        out["arms"][arm] = entry
    sky = out["arms"].get("skyline", {}).get("gain_last_vs_night0")
    for arm, entry in out["arms"].items():
        gain = entry.get("gain_last_vs_night0")
        if sky and gain and arm != "skyline" and sky["diff"] > 0:
            entry["share_of_skyline_gain"] = round(gain["diff"] / sky["diff"], 3)
    if {"debiased", "naive"} <= set(arms):
        last = min(max(n["night"] for n in loaded[a]["nights"]) for a in ("debiased", "naive"))
        out["debiased_vs_naive"] = _interval(arms["naive"], last, arms["debiased"], last,
                                             f"debiased - naive at night {last}")
    return out


def traffic_check(work: Path, nights: list[dict[str, Any]], traffic, gate) -> dict[str, Any] | None:
    """The gate's newest-traffic check night by night against the simulator's truth (uniret.loop.traffic_truth);
    None when no night kept its newest traffic."""
    rows = [{"night": n["night"], **c} for n in nights
            if (c := traffic_truth.night_comparison(work / "nights" / str(n["night"]), *traffic, gate))]
    return ({"nights": rows, "agreement": traffic_truth.agreement(rows), "by_judgments": traffic_truth.agreements(rows)}
            if rows else None)


def _max_error(table: list[dict[str, Any]], truth) -> float | None:
    errs = [abs(row["relative"] - float(truth[row["position"] - 1])) for row in table if row.get("relative") is not None]
    return round(max(errs), 4) if errs else None


def markdown(doc: dict[str, Any], command: str) -> str:
    """The report as markdown."""
    lines = ["# The learning loop in simulation", "", f"Command: `{command}`", "",
             f"Metric: {doc['metric']}. The traffic domain is in-domain here; the zero-shot macro is over the other sets.",
             ""]
    for arm, entry in doc["arms"].items():
        lines += [f"## {arm}", "", f"Settings (index.static_query): `{json.dumps(entry['settings'])}`; profile "
                  f"{entry['profile']}; {entry['sessions_per_night']} sessions a night; RandPair share "
                  f"{entry['randpair_share']}; transformer "
                  + (f"retrained {entry['retrain_steps']} steps a night on the clicks" if entry.get("retrain_steps")
                     else "not retrained (the light profile)")
                  + f"; gate: {entry['gate']}.", "",
                  "| night | day | nDCG@10 | BM25 | zero-shot macro | training sessions | click examples | wall s |",
                  "|---|---|---|---|---|---|---|---|"]
        for n in entry["nights"]:
            clicks = (n.get("clicks_used") or {}).get("examples")
            lines.append(f"| {n['night']} | {n['day'] or '-'} | {n['ndcg@10']:.4f} | {n['bm25_ndcg@10']:.4f} | "
                         f"{n['zero_shot_macro'] if n['zero_shot_macro'] is None else round(n['zero_shot_macro'], 4)} | "
                         f"{n['train_sessions'] or 0} | {clicks or 0} | {n['wall_seconds']} |")
        if g := entry.get("gain_last_vs_night0"):
            lines += ["", f"Last night - night 0: {g['diff']:+.4f} ({g['low']:+.4f} .. {g['high']:+.4f}, paired "
                          f"bootstrap 95%, {g['queries']} queries)"
                      + (f"; {entry['share_of_skyline_gain']:.0%} of the skyline's gain" if "share_of_skyline_gain" in entry else "")]
        if z := entry.get("zero_shot_check"):
            p = z["pooled"]
            lines += ["", f"Zero-shot sets, night {z['night']} - night 0 under the gate's paired rule "
                          f"({', '.join(z['sets'])}): macro {p['diff']:+.4f} (one-sided {p['confidence']:.0%} bound "
                          f"{p['high']:+.4f}, margin {p['margin']}); per set "
                          + ", ".join(f"{n} {v['diff']:+.4f}" + (" (worse)" if v["worse"] else "")
                                      for n, v in z["per_set"].items())
                          + f": {'within' if z['within_margins'] else 'NOT within'} the gate's margins."]
        if c := entry.get("randpair_cost"):
            lines += ["", f"RandPair's cost: {c['swapped']} of {c['answers']} logged answers shown with two adjacent "
                          f"results swapped; nDCG@10 as shown minus as ranked {c['ndcg10_shown_minus_ranked']:+.5f} "
                          f"per answer ({c['on']})."]
        if (c := entry.get("interleaving_cost")) and c["ndcg10_interleaved_minus_production"] is not None:
            lines += ["", f"The canary's interleaving: {c['interleaved']} logged answers interleaved; nDCG@10 "
                          f"interleaved minus production's own, per (day, query) answered both ways ({c['compared']} "
                          f"answers, {c['strata']} strata), {c['ndcg10_interleaved_minus_production']:+.5f} per "
                          f"interleaved answer ({c['on']})."]
        lines += traffic_truth.markdown(entry.get("traffic_check") or {})
        if p := entry.get("propensities"):
            lines += ["", f"Propensities estimated on night {p['night']} (relative to rank 1) beside the simulator's; "
                          f"largest error {p['max_abs_error']}; 95% interval: the harvest over resamples of the "
                          "logged query texts (feedback.propensity_bootstrap; - where that night's stage made none):",
                      "", "| rank | estimated | 95% interval | estimator | EM | simulator |", "|---|---|---|---|---|---|"]
            for row in p["table"]:
                interval = f"{row['low']} .. {row['high']}" if row.get("low") is not None else "-"
                lines.append(f"| {row['position']} | {row.get('relative')} | {interval} | {row.get('estimator')} | "
                             f"{row.get('em_relative')} | {p['simulator_relative'][row['position'] - 1]} |")
        lines.append("")
    if d := doc.get("debiased_vs_naive"):
        lines += [f"Debiased - naive: {d['diff']:+.4f} ({d['low']:+.4f} .. {d['high']:+.4f}, {d['queries']} queries).", ""]
    return "\n".join(lines)


def plot(doc: dict[str, Any], path: Path) -> None:
    """nDCG@10 night by night, one line per arm, BM25 dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for arm, entry in doc["arms"].items():
        xs = [n["night"] for n in entry["nights"]]
        ax.plot(xs, [n["ndcg@10"] for n in entry["nights"]], marker="o", label=arm)
    first = next(iter(doc["arms"].values()))["nights"]
    ax.axhline(first[0]["bm25_ndcg@10"], ls="--", color="grey", label="BM25")
    ax.set_xlabel("night")
    ax.set_ylabel("nDCG@10, test split")
    ax.set_title("hybrid_fast learning from simulated clicks")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def headline(doc: dict[str, Any] | None) -> str:
    """The README's loop block: each arm's first and last night with the gain's interval."""
    if not doc:
        return "No loop report yet: `uniret loop report` writes results/loop/ (docs/learning-loop.md)."
    lines = ["| arm | nights | nDCG@10 night 0 | last night | last - night 0 (95% interval) | share of the skyline's gain |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for arm, entry in doc["arms"].items():
        nights = entry["nights"]
        gain = entry.get("gain_last_vs_night0")
        share = entry.get("share_of_skyline_gain")
        lines.append(f"| {arm} | {nights[-1]['night']} | {nights[0]['ndcg@10']:.4f} | {nights[-1]['ndcg@10']:.4f} | "
                     + (f"{gain['diff']:+.4f} ({gain['low']:+.4f} .. {gain['high']:+.4f})" if gain else "–")
                     + f" | {'–' if share is None else f'{share:.0%}'} |")
    first = next(iter(doc["arms"].values()))
    lines += ["", f"{doc['metric']}; {first['sessions_per_night']} simulated sessions a night (ULTRA's click "
                  f"protocol on the domain's train qrels), profile {first['profile']}. Report: "
                  "[results/loop/loop.md](results/loop/loop.md); how: [docs/learning-loop.md](docs/learning-loop.md)."]
    return "\n".join(lines)
