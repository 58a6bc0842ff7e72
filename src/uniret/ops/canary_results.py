"""The README's canary block, from results/canary/canary.json (written by lab/canary_study.py, E69)."""

from __future__ import annotations

from typing import Any


def canary_headline(doc: dict[str, Any] | None, serving: dict[str, Any] | None) -> str:
    """A table of the simulated canaries' decisions, the traffic ratio to an A/B test and the serving cost."""
    if doc is None:
        return "No canary study in results/canary/ yet (`python lab/canary_study.py`, docs/gate-registry.md#canary)."
    a = doc["assumptions"]
    lines = ["| candidate | nDCG@10 vs production (traffic) | canaries | promoted | rolled back |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name, pair in doc["pairs"].items():
        t = pair["target"]
        lines.append(f"| {name.replace('_', ' ')} | {pair['truth_ndcg@10']['traffic_weighted']['diff']:+.4f} | "
                     f"{t['reps']} | {t['promoted']} | {t['rolled_back']} |")
    notes = [f"Simulated clicks on {a['traffic'].split(',')[0]}; rule {a['rule']}, alpha {a['alpha']}, "
             f"{a['min_impressions']:,} clicked impressions."]
    for name, need in (doc.get("needed") or {}).items():
        notes.append(f"Catching the {name} one 95% of the time took {need['interleaving']:,.0f} impressions; "
                     f"an A/B test {need['ab']:,.0f} ({need['ratio']:.1f}x, {need['ratio_low']:.1f} .. "
                     f"{need['ratio_high']:.1f}).")
    if serving:
        lat = serving["latency_ms"]
        notes.append(f"Interleaved p50 {lat['interleaved']['p50']:.2f} ms vs {lat['plain']['p50']:.2f} ms; "
                     f"+{serving['rss_mb_with_candidate'] - serving['rss_mb_production']:.0f} MB.")
    notes.append("Report (and on a Zipf stream, where it disagrees with nDCG@10): "
                 "[results/canary/canary.md](results/canary/canary.md); how: "
                 "[docs/gate-registry.md](docs/gate-registry.md#canary).")
    return "\n".join(lines) + "\n\n" + " ".join(notes)
