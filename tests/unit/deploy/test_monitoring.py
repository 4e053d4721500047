"""The alert rules (extensions/prometheus/nodeguard-alerts.yml) and their PrometheusRule (deploy/monitoring).

promtool evaluates the rules over synthetic kube-state-metrics series (nodeguard-alerts.test.yml): every alert
has a case where it fires and one where it does not. The PrometheusRule is generated from the rule file
(scripts/render-monitoring.py) and must not drift. The alerts follow kube-prometheus' conventions, and every
runbook_url is a section of docs/monitoring.md, which ships.
"""

from __future__ import annotations

import importlib.util
import re

import yaml
from ansible_collections.nodeguard.failover.plugins.module_utils.model import presets, remediation, versions
from monitoring import MONITORING, REPO, RULE_TESTS, RULES, RULES_DIR, alerts, check_rule_file, promtool, rule_tests

PROMETHEUS_RULE = MONITORING / "nodeguard-prometheusrule.yaml"
DOCS = REPO / "docs" / "monitoring.md"
SEVERITIES = {"critical", "warning", "info"}  # kube-prometheus' severities


def render_monitoring():
    spec = importlib.util.spec_from_file_location("render_monitoring", REPO / "scripts" / "render-monitoring.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seconds(duration: str) -> int:
    """A Prometheus duration of the forms the rules use (60s, 6m, 1h) in seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert parts and duration, duration
    return sum(int(n or 0) * units[u] for n, u in zip(parts.groups(), "hms", strict=True))


# --- the rules, evaluated by promtool -------------------------------------------------------------


def test_rules_are_valid() -> None:
    result = promtool("check", "rules", RULES.name, cwd=RULES_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in result.stdout


def test_rules_fire_as_specified() -> None:
    result = promtool("test", "rules", RULE_TESTS.name, cwd=RULES_DIR)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    cases = [case for test in rule_tests() for case in test["alert_rule_test"]]
    for name in alerts():
        assert any(c["alertname"] == name and c["exp_alerts"] for c in cases), f"{name}: no case where it fires"
        assert any(c["alertname"] == name and not c["exp_alerts"] for c in cases), f"{name}: no case where it does not"


def test_the_issue_35_alerts_are_there() -> None:
    """Taint held too long, NotReady and not remediated, VolumeAttachments and Terminating pods on a tainted node."""
    rules = alerts()
    assert seconds(rules["NodeguardOutOfServiceTaintTooOld"]["for"]) == 3600
    assert "kube_volumeattachment_info" in rules["NodeguardVolumeAttachmentsOnTaintedNode"]["expr"]
    assert "kube_pod_deletion_timestamp" in rules["NodeguardPodsTerminatingOnTaintedNode"]["expr"]
    assert "unless on (node) max by (node) (kube_node_spec_taint" in rules["NodeguardNodeNotRemediated"]["expr"]


def test_not_remediated_waits_twice_the_slowest_profiles_not_ready_time() -> None:
    """No profile's own run is late by the alert: its `for` is at least twice the longest NotReady wait."""
    waits = [
        remediation.remediation_settings(presets.preset_timings(name, version))["not_ready_seconds"]
        for name in presets.PRESET_NAMES
        for version in (versions.Version(*versions.OLDEST_SUPPORTED), versions.Version(*versions.NEWEST_SUPPORTED))
    ] + [remediation.STOCK_REMEDIATION["not_ready_seconds"]]
    assert seconds(alerts()["NodeguardNodeNotRemediated"]["for"]) >= 2 * max(waits)


def test_only_node_down_starts_a_failover() -> None:
    """The EDA rulebook acts on NodeguardNodeDown alone of these; a new alert must never start node-outage."""
    path = REPO / "extensions" / "eda" / "plugins" / "event_filter" / "alertmanager_nodes.py"
    spec = importlib.util.spec_from_file_location("alertmanager_nodes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(alerts()) & set(module.NODE_DOWN_ALERTS) == {"NodeguardNodeDown"}


# --- kube-prometheus conventions and runbooks ------------------------------------------------------


def test_alerts_follow_kube_prometheus_conventions() -> None:
    for name, rule in alerts().items():
        assert re.fullmatch(r"Nodeguard[A-Z][A-Za-z]+", name), name
        assert rule["labels"]["severity"] in SEVERITIES, name
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}, name


def heading_anchors(markdown: str) -> set:
    """GitHub's anchors of the markdown's headings: lower case, spaces to dashes, other punctuation dropped."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", markdown, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_runbook_url_is_a_section_of_the_shipped_docs() -> None:
    # The project publishes no documentation site: the URL is the page's path in the collection, which ships
    # (docs/monitoring.md says how to point it at your own copy).
    documentation = "docs"
    anchors = heading_anchors(DOCS.read_text())
    for name, rule in alerts().items():
        url = rule["annotations"]["runbook_url"]
        assert url == f"{documentation}/monitoring.md#{name.lower()}", (name, url)
        assert name.lower() in anchors, f"docs/monitoring.md has no section {name}"


# --- the PrometheusRule -------------------------------------------------------------------------


def test_prometheus_rule_is_generated_from_the_rule_file() -> None:
    """One home: the PrometheusRule is what scripts/render-monitoring.py makes of the rule file, byte for byte."""
    module = render_monitoring()
    assert PROMETHEUS_RULE.read_text() == module.render(RULES.read_text()), "run scripts/render-monitoring.py"


def test_the_generator_notices_drift() -> None:
    module = render_monitoring()
    drifted = RULES.read_text().replace("for: 1h", "for: 2h")
    assert module.render(drifted) != PROMETHEUS_RULE.read_text()


def test_prometheus_rule_holds_the_same_rules_and_promtool_accepts_them(tmp_path) -> None:
    rule = yaml.safe_load(PROMETHEUS_RULE.read_text())
    assert rule["spec"]["groups"] == yaml.safe_load(RULES.read_text())["groups"]
    result = check_rule_file(rule["spec"]["groups"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_prometheus_rule_has_kube_prometheus_labels_and_the_collections_namespace() -> None:
    rule = yaml.safe_load(PROMETHEUS_RULE.read_text())
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    labels = rule["metadata"]["labels"]
    assert labels["prometheus"] == "k8s" and labels["role"] == "alert-rules"
    namespace = yaml.safe_load((REPO / "deploy" / "rbac" / "00-namespace.yaml").read_text())["metadata"]["name"]
    assert rule["metadata"]["namespace"] == namespace
