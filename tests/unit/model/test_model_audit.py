"""failover_timeline's model: read what a cluster runs, never refuse, list violations."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import PRESET_NAMES
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import audit_timeline, build_profile
from ansible_collections.nodeguard.failover.plugins.module_utils.model.table import timeline_table

FACTS = {"kubernetes_version": "v1.35.4+rke2r1", "node_count": 1000, "distribution": "rke2"}
SEED_001 = {
    "kubelet": {"nodeStatusUpdateFrequency": "1s"},
    "kube_controller_manager": {"--node-monitor-period": "1s", "node-monitor-grace-period": "4s"},
}


def test_empty_settings_are_the_version_defaults():
    current = audit_timeline({}, FACTS)
    stock = build_profile(FACTS, "kubernetes-default")
    assert current["timeline"] == stock["timeline"]
    assert current["settings"]["kube_controller_manager"]["node-monitor-grace-period"] == "50s"
    assert "node_monitor_grace_period" in current["defaults_used"]


def test_seed_001_is_listed_not_refused():
    current = audit_timeline(SEED_001, FACTS)
    rules = [v["rule"] for v in current["violations"]]
    assert rules == ["heartbeat-retries", "lease-vs-grace", "heartbeat-budget"]
    assert current["timeline"]["not_ready"]["expected"] == 4.0


def test_unreadable_values_are_violations_and_fall_back():
    current = audit_timeline({"kube_apiserver": {"default-unreachable-toleration-seconds": "soon"},
                              "sysctl": "oops"}, FACTS)
    rules = [v["rule"] for v in current["violations"]]
    assert rules.count("wrong-type") == 2
    assert current["settings"]["kube_apiserver"]["default-unreachable-toleration-seconds"] == "300"


def test_a_fast_profile_reads_back_identically():
    profile = build_profile(dict(FACTS, node_count=100), "fast")
    current = audit_timeline(profile["settings"], dict(FACTS, node_count=100))
    assert current["timeline"] == profile["timeline"]
    assert current["violations"] == []


def test_table_names_events_and_violations():
    table = timeline_table(audit_timeline(SEED_001, FACTS), build_profile(dict(FACTS, node_count=100), "fast"))
    lines = table.splitlines()
    assert lines[0].split() == ["seconds", "after", "power-off", "before:", "current", "after:", "fast"]
    assert any(line.startswith("node NotReady") and "4.0s" in line and "4.1s" in line for line in lines)
    assert any(line.startswith("StatefulSet pod replaced (alone)") and line.count("never") == 2 for line in lines)
    assert any("heartbeat-budget" in line for line in lines)


@pytest.mark.parametrize("version", ["1.18.20", "1.24.3", "1.26.1", "1.31.0", "1.32.1", "1.36.0"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_every_rendered_profile_reads_back_to_the_same_timeline(version, preset):
    facts = {"kubernetes_version": version, "node_count": 20}
    profile = build_profile(facts, preset)
    current = audit_timeline(profile["settings"], facts)
    assert current["timeline"] == profile["timeline"]
    assert current["load"] == profile["load"]
    assert current["violations"] == profile["violations"]
