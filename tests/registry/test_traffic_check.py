"""The gate's newest-traffic check on hand-written evaluate output: pass, fail, and every skip's reason."""

from __future__ import annotations

from uniret.config.gate import GateConfig, NewestTrafficConfig
from uniret.registry.gate import GateInputs, ProductionRef, decide, decision_markdown
from uniret.registry.traffic_check import TrafficScores, newest_traffic_check


def _cfg(**nt) -> GateConfig:
    return GateConfig(candidate_system="uni", regression_resamples=1000,
                      newest_traffic=NewestTrafficConfig(**{"margin": 0.01, **nt}))


def _section(production: dict) -> dict:
    return {"status": "scored", "reason": "", "day": "2026-12-04",
            "candidate": {"system": "uni", "scores": {}}, "production": production}


SCORED = {"status": "scored", "version": "v1", "system": "uni"}
PROD = {f"q{i}": 0.2 + 0.05 * (i % 7) for i in range(40)}


def test_worse_fails_equal_passes():
    worse = TrafficScores(_section(SCORED), {q: v - 0.1 for q, v in PROD.items()}, PROD)
    check = newest_traffic_check(_cfg(), worse, "v1")
    assert check.status == "fail" and check.rule == "paired" and check.value == -0.1
    assert check.reason.startswith(
        "held-out day 2026-12-04, click_model judgments, condensed_ndcg@10: candidate - production v1")
    equal = TrafficScores(_section(SCORED), dict(PROD), PROD)
    assert newest_traffic_check(_cfg(), equal, "v1").status == "pass"


def test_skips_and_failures_say_why():
    def check(section, production="v1", **cfg):
        return newest_traffic_check(_cfg(**cfg), TrafficScores(section), production)

    skipped = {"status": "skipped", "reason": "feedback stage skipped: no logs (feedback.log_dir is null)"}
    assert (check(skipped).status, check(skipped).reason) == (
        "skipped", "no newest traffic: feedback stage skipped: no logs (feedback.log_dir is null)")
    assert check(_section(SCORED), enabled=False).reason == "off (gate.newest_traffic.enabled is false)"
    cold = check(_section({"status": "none", "reason": "no production bundle (cold start)"}), production=None)
    assert (cold.status, cold.reason) == ("skipped", "cold start: no production bundle")
    other = check(_section({**SCORED, "status": "other_corpus", "reason": "production v1 indexes 'nfcorpus'"}))
    assert (other.status, other.reason) == ("skipped", "production v1 indexes 'nfcorpus'")
    stale = check(_section(SCORED), production="v2")
    assert stale.status == "fail" and "production is now v2: rerun evaluate" in stale.reason
    broken = check(_section({**SCORED, "status": "unavailable", "reason": "production v1 fails verification: x"}))
    assert (broken.status, broken.reason) == ("fail", "production v1 fails verification: x")
    unread = newest_traffic_check(_cfg(), TrafficScores(_section(SCORED), unreadable="per_query/uni/x.json: gone"), "v1")
    assert unread.status == "fail" and unread.reason.endswith("per-query scores unreadable: per_query/uni/x.json: gone")


def test_decide_lists_the_check_and_decision_md_shows_it():
    metrics = {"datasets": {"scifact": {"uni": {"ndcg@10": 0.7}, "bm25": {"ndcg@10": 0.6}}},
               "macro": {"uni": {"ndcg@10": 0.7}, "bm25": {"ndcg@10": 0.6}}}
    traffic = TrafficScores(_section(SCORED), {q: v - 0.1 for q, v in PROD.items()}, PROD)
    inputs = GateInputs(metrics=metrics, production=ProductionRef("v1", metrics, "uni"), newest_traffic=traffic)
    decision = decide(_cfg(), inputs)
    assert not decision.passed and decision.reasons()[0].startswith("newest_traffic: held-out day 2026-12-04")
    assert "| newest_traffic | held-out day 2026-12-04 | paired |" in decision_markdown(decision)
    # metrics written without the section (by hand, or before the check existed) add no check
    assert "newest_traffic" not in {c.name for c in decide(_cfg(), GateInputs(metrics=metrics)).checks}
