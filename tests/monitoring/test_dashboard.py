"""k8s/monitoring/grafana-dashboard.json: valid dashboard JSON whose every query reads metrics serving exports."""

from __future__ import annotations

import json
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "k8s" / "monitoring" / "grafana-dashboard.json"


def _panels(dashboard: dict) -> list[dict]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out += panel.get("panels", [])  # a collapsed row holds its panels
    return [p for p in out if p["type"] != "row"]


def test_dashboard_is_a_grafana_dashboard():
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    panels = _panels(dashboard)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"]) and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
    titles = " ".join(p["title"].lower() for p in panels)
    for topic in ("queries per second", "p50 / p95", "errors", "reloads", "bundle", "age", "nightly"):
        assert topic in titles, f"no panel about {topic}"


def test_every_query_reads_metrics_serving_exports(exported_names, promql_names, scrape_series):
    dashboard = json.loads(DASHBOARD.read_text())
    read: set[str] = set()
    for panel in _panels(dashboard):
        for target in panel["targets"]:
            names = promql_names(target["expr"])
            assert names, f"panel {panel['title']!r}: no metric in {target['expr']!r}"
            assert names <= exported_names | scrape_series, \
                f"panel {panel['title']!r} reads {sorted(names - exported_names - scrape_series)}, not exported"
            read |= names
    # the operations gauges and the request metrics are all on the dashboard
    for name in ("uniret_search_requests_total", "uniret_search_latency_seconds_bucket", "uniret_reloads_total",
                 "uniret_bundle_info", "uniret_bundle_published_timestamp_seconds", "uniret_nightly_blocked_in_row",
                 "uniret_nightly_last_outcome", "uniret_nightly_runs_total", "uniret_bundle_bench_p95_seconds",
                 "uniret_registry_paused"):
        assert name in read, f"{name} is on no panel"


def test_the_name_check_can_fail(exported_names, promql_names):
    names = promql_names('histogram_quantile(0.95, sum by (mode, le) (rate(uniret_search_latency_secs_bucket'
                         '{job=~"$job", status="200"}[5m]))) > on (mode) 2 * uniret_bundle_bench_p95_seconds')
    assert names == {"uniret_search_latency_secs_bucket", "uniret_bundle_bench_p95_seconds"}
    assert not names <= exported_names  # a misspelt metric is caught
    assert promql_names("time() - max(uniret_nightly_last_run_timestamp_seconds) > 36 * 3600") == {
        "uniret_nightly_last_run_timestamp_seconds"}
