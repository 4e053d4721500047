"""The shipped rulebook and its vars: only checked values go to a playbook, no fixed job id, no match-all default."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from rulebook_rules import action, condition

REPO = Path(__file__).resolve().parents[3]
RULEBOOK = yaml.safe_load((REPO / "extensions" / "eda" / "rulebooks" / "node-failover.yml").read_text())
VARS = yaml.safe_load((REPO / "extensions" / "eda" / "vars" / "node-failover.yml").read_text())
# Event fields the filter checks (tests/unit/eda/test_alertmanager_nodes.py): a Kubernetes node name, an RFC 3339 time.
CHECKED = {"event.node", "event.starts_at"}


def rules() -> list[dict]:
    (ruleset,) = RULEBOOK
    return ruleset["rules"]


def expressions(value) -> list[str]:
    """The Jinja expressions inside every string of a YAML value."""
    if isinstance(value, str):
        return re.findall(r"{{(.*?)}}", value)
    if isinstance(value, dict):
        return [e for v in value.values() for e in expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in expressions(v)]
    return []


def test_playbooks_get_only_checked_node_names() -> None:
    passed = []
    for rule in rules():
        run = action(rule).get("run_playbook")
        if run:
            passed += [(name, e.strip()) for name, v in run["extra_vars"].items() for e in expressions(v)]
    assert passed, "the rulebook runs no playbook?"
    for name, expression in passed:
        used = set(re.findall(r"event\.[a-z_]+", expression))
        assert used <= CHECKED, f"{name}: {expression!r} passes an unchecked event field"
        assert "|" not in expression


def test_no_fixed_job_id_is_passed() -> None:
    for rule in rules():
        run = action(rule).get("run_playbook") or {}
        assert not any("job_id" in name for name in run.get("extra_vars", {})), rule["name"]


def test_refusals_are_decided_first_and_only_logged() -> None:
    first = rules()[0]
    assert condition(first) == "event.nodeguard_refused is defined"
    assert list(action(first)) == ["debug"]


def test_the_allow_list_is_explicit_and_empty_by_default() -> None:
    assert VARS["nodeguard_allow_nodes"] == []
    assert "nodeguard_allow_nodes_regex" not in VARS
    conditions = " ".join(condition(rule) for rule in rules())
    assert "event.node not in vars.nodeguard_allow_nodes" in conditions
    assert "regex" not in conditions


def test_kube_prometheus_node_alerts_are_node_down_alerts_and_no_rule_names_one_alert() -> None:
    """The filter passes on only node-down alerts (NodeguardNodeDown, KubeNodeNotReady, KubeNodeUnreachable); every
    rule after the refusal treats them alike, so a KubeNodeNotReady alert is not silently matched by no rule."""
    (ruleset,) = RULEBOOK
    (source,) = ruleset["sources"]
    (alert_filter,) = source["filters"]
    assert alert_filter["nodeguard.failover.alertmanager_nodes"]["node_down_alerts"] == [
        "NodeguardNodeDown", "KubeNodeNotReady", "KubeNodeUnreachable"]
    assert not any("NodeguardNodeDown" in condition(rule) for rule in rules())


def test_every_storm_alert_is_logged_and_the_run_is_retried() -> None:
    (storm,) = [rule for rule in rules() if "nodes_down" in condition(rule)]
    assert "throttle" not in storm and list(action(storm)) == ["debug"]
    assert "truncated_alerts" in action(storm)["debug"]["msg"]
    (outage,) = [rule for rule in rules() if action(rule).get("run_playbook", {}).get("name") == "{{ nodeguard_outage_playbook }}"]
    run = action(outage)["run_playbook"]
    assert (run["retries"], run["delay"]) == (2, 30)
