"""k8s/monitoring/uniret-alerts.rules.yml: valid for promtool, every alert tested firing and quiet
(alerts.test.yml), the PrometheusRule holding the same groups, every metric one serving exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

MONITORING = Path(__file__).resolve().parents[2] / "k8s" / "monitoring"
RULES = MONITORING / "uniret-alerts.rules.yml"
RULE_TESTS = Path(__file__).with_name("alerts.test.yml")
PROMETHEUS_RULE = MONITORING / "prometheusrule.yaml"


def _run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd, check=False)


def _alerts(doc: dict) -> dict[str, dict]:
    return {r["alert"]: r for g in doc["groups"] for r in g["rules"] if "alert" in r}


def test_promtool_checks_the_rules(promtool):
    out = _run(promtool, "check", "rules", str(RULES))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_alerts(yaml.safe_load(RULES.read_text())))} rules found" in out.stdout


def test_promtool_unit_tests_pass(promtool):
    out = _run(promtool, "test", "rules", str(RULE_TESTS))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_the_unit_tests_can_fail(promtool, tmp_path):
    """A threshold moved in a copy of the rules makes its firing case fail."""
    folder = tmp_path / "k8s" / "monitoring"
    folder.mkdir(parents=True)
    text = RULES.read_text()
    assert "uniret_nightly_blocked_in_row) >= 2" in text
    (folder / RULES.name).write_text(text.replace("uniret_nightly_blocked_in_row) >= 2", "uniret_nightly_blocked_in_row) >= 3"))
    tests = tmp_path / "tests" / "monitoring"
    tests.mkdir(parents=True)
    shutil.copy(RULE_TESTS, tests / RULE_TESTS.name)
    out = _run(promtool, "test", "rules", str(tests / RULE_TESTS.name))
    assert out.returncode != 0
    assert "UniretNightlyBlocked" in out.stdout + out.stderr


def test_every_alert_has_a_firing_and_a_quiet_case():
    alerts = set(_alerts(yaml.safe_load(RULES.read_text())))
    cases: dict[str, set[str]] = {name: set() for name in alerts}
    for group in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for case in group.get("alert_rule_test", []):
            cases.setdefault(case["alertname"], set()).add("firing" if case["exp_alerts"] else "quiet")
    assert set(cases) == alerts, f"cases for unknown alerts: {set(cases) - alerts}"
    assert {name: kinds for name, kinds in cases.items() if kinds != {"firing", "quiet"}} == {}


def test_prometheus_rule_holds_the_same_groups():
    rules = yaml.safe_load(RULES.read_text())
    (doc,) = [d for d in yaml.safe_load_all(PROMETHEUS_RULE.read_text()) if d]
    assert (doc["apiVersion"], doc["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert doc["metadata"]["name"] == "uniret-alerts"
    assert set(doc) == {"apiVersion", "kind", "metadata", "spec"} and set(doc["spec"]) == {"groups"}
    assert doc["spec"]["groups"] == rules["groups"]


def test_the_agreement_check_can_fail():
    rules = yaml.safe_load(RULES.read_text())
    (doc,) = [d for d in yaml.safe_load_all(PROMETHEUS_RULE.read_text()) if d]
    doc["spec"]["groups"][0]["rules"][0]["for"] = "1m"
    assert doc["spec"]["groups"] != rules["groups"]


def test_rules_read_only_metrics_serving_exports(exported_names, promql_names, scrape_series):
    for name, rule in _alerts(yaml.safe_load(RULES.read_text())).items():
        read = promql_names(rule["expr"])
        assert read, f"{name}: no metric found in {rule['expr']!r}"
        assert read <= exported_names | scrape_series, f"{name} reads {sorted(read - exported_names - scrape_series)}"


def test_prometheus_rule_validates_against_the_crd_schema():
    """The CRD's fields (tests/monitoring/schemas): a misspelt key or a wrong type in a rule fails."""
    import jsonschema

    schema = yaml.safe_load((Path(__file__).parent / "schemas" / "prometheusrule-v1.yaml").read_text())
    (doc,) = [d for d in yaml.safe_load_all(PROMETHEUS_RULE.read_text()) if d]
    jsonschema.Draft202012Validator(schema).validate(doc)
    bad = yaml.safe_load(PROMETHEUS_RULE.read_text().split("spec:", 1)[0] + "spec:\n  groups:\n  - name: g\n    rulez: []\n")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(bad)


def test_monitoring_kustomization_renders():
    """`kubectl kustomize k8s/monitoring`: the ServiceMonitor, the PrometheusRule and the dashboard ConfigMap."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (the render check needs its built-in kustomize)")
    out = _run(kubectl, "kustomize", str(MONITORING))
    assert out.returncode == 0, out.stderr
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out.stdout) if d}
    assert set(docs) == {("ServiceMonitor", "uniret-serving"), ("PrometheusRule", "uniret-alerts"),
                         ("ConfigMap", "uniret-grafana-dashboard")}
    assert all(d["metadata"]["namespace"] == "uniret" for d in docs.values())
    dashboard = docs[("ConfigMap", "uniret-grafana-dashboard")]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["data"]["uniret.json"] == (MONITORING / "grafana-dashboard.json").read_text()
    monitor = docs[("ServiceMonitor", "uniret-serving")]
    base = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(
        (MONITORING.parent / "service.yaml").read_text()) if d}
    service = base[("Service", "uniret-serving")]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}


def test_every_alert_links_a_runbook_section():
    """Each alert's `runbook` annotation names docs/runbook.md and a heading that exists there (mkdocs' anchor)."""
    headings = [line.lstrip("#").strip() for line in (MONITORING.parents[1] / "docs" / "runbook.md").read_text().splitlines()
                if line.startswith("## ")]
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
    for name, rule in _alerts(yaml.safe_load(RULES.read_text())).items():
        page, _, anchor = rule["annotations"]["runbook"].partition("#")
        assert page == "docs/runbook.md" and anchor in anchors, f"{name}: no runbook section {anchor!r}"
