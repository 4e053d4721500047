"""Every refusal names its rule; each case breaks the rule it tests before any other."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import audit_timeline, build_profile

FACTS = {"kubernetes_version": "1.35.4", "node_count": 3, "distribution": "kubeadm"}


def refused(**kwargs):
    facts = kwargs.pop("facts", FACTS)
    with pytest.raises(ProfileError) as error:
        build_profile(facts, **kwargs)
    assert str(error.value).startswith(f"[{error.value.rule}] ")
    return error.value


@pytest.mark.parametrize("rule, kwargs", [
    ("heartbeat-floor", {"preset": "balanced", "overrides": {"node_status_update_frequency": "500ms"}}),
    ("heartbeat-floor", {"preset": "balanced", "overrides": {"node_lease_duration_seconds": 1}}),
    ("heartbeat-floor", {"preset": "fast", "network_rtt_ms": 100}),
    ("monitor-period-floor", {"preset": "balanced", "overrides": {"node_monitor_period": "250ms"}}),
    ("grace-floor", {"preset": "fast", "overrides": {"node_monitor_grace_period": "2s"}}),
    ("grace-floor", {"preset": "balanced", "network_rtt_ms": 250}),
    ("heartbeat-retries", {"preset": "balanced", "overrides": {"node_monitor_grace_period": "15s"}}),
    ("lease-vs-grace", {"preset": "fast", "overrides": {
        "node_status_update_frequency": "1s", "node_status_report_frequency": "1s",
        "node_lease_duration_seconds": 40, "node_monitor_grace_period": "6s"}}),
    ("lease-vs-grace", {"preset": "balanced", "overrides": {"node_monitor_grace_period": "5m"}}),
    ("monitor-period-vs-grace", {"preset": "balanced", "overrides": {"node_monitor_period": "12s"}}),
    ("startup-grace-vs-grace", {"preset": "balanced", "overrides": {"node_startup_grace_period": "10s"}}),
    ("report-vs-update", {"preset": "balanced", "overrides": {
        "node_status_update_frequency": "20s", "node_status_report_frequency": "10s"}}),
    ("toleration-vs-grace", {"preset": "balanced", "overrides": {"unreachable_toleration_seconds": 10}}),
    ("toleration-vs-grace", {"preset": "balanced", "overrides": {"not_ready_toleration_seconds": 19}}),
    ("heartbeat-budget", {"preset": "aggressive", "facts": dict(FACTS, node_count=1000)}),
    ("heartbeat-budget", {"preset": "fast", "heartbeat_budget": {"bytes_per_second": 1000}}),
    ("tcp-retries-floor", {"preset": "fast", "overrides": {"tcp_retries2": 3}}),
    ("keepalive-range", {"preset": "fast", "overrides": {"tcp_keepalive_probes": 0}}),
    ("unsupported-flag", {"preset": "fast", "facts": dict(FACTS, kubernetes_version="1.29.4"),
                          "overrides": {"disable_force_detach_on_timeout": True}}),
    ("unsupported-version", {"preset": "fast", "facts": dict(FACTS, kubernetes_version="1.17.0")}),
    ("unknown-preset", {"preset": "fastest"}),
    ("unknown-preset", {"preset": 3}),
    ("unknown-distribution", {"preset": "fast", "facts": dict(FACTS, distribution="openshift")}),
    ("unknown-setting", {"preset": "fast", "overrides": {"grace": "4s"}}),
    ("unknown-setting", {"preset": "fast", "heartbeat_budget": {"writes": 10}}),
    ("conflicting-input", {"preset": "fast", "detect_seconds": 10}),
    ("conflicting-input", {"preset": "custom"}),
    ("target-unreachable", {"detect_seconds": 1}),
    ("target-unreachable", {"detect_seconds": 10, "evict_seconds": 12}),
    ("wrong-type", {"preset": "fast", "overrides": ["tcp_retries2"]}),
    ("wrong-type", {"preset": "fast", "overrides": {"node_monitor_grace_period": "four seconds"}}),
    ("wrong-type", {"preset": "fast", "overrides": {"node_lease_duration_seconds": "3s"}}),
    ("wrong-type", {"preset": "fast", "overrides": {"tcp_retries2": True}}),
    ("wrong-type", {"preset": "fast", "overrides": {"disable_force_detach_on_timeout": "yes"}}),
    ("wrong-type", {"preset": "fast", "overrides": {"node_monitor_period": "0s"}}),
    ("wrong-type", {"preset": "fast", "facts": dict(FACTS, node_count="many")}),
    ("wrong-type", {"preset": "fast", "facts": dict(FACTS, node_count=0)}),
    ("wrong-type", {"preset": "fast", "facts": {"node_count": 3}}),
    ("wrong-type", {"preset": "fast", "facts": "1.35.4"}),
    ("wrong-type", {"detect_seconds": "ten"}),
    ("wrong-type", {"detect_seconds": True}),
    ("wrong-type", {"evict_seconds": -1}),
    ("wrong-type", {"preset": "fast", "network_rtt_ms": "1ms"}),
])
def test_rule_refusal(rule, kwargs):
    assert refused(**kwargs).rule == rule


def test_message_lists_the_other_broken_rules():
    error = refused(preset="balanced", overrides={"node_monitor_grace_period": "5m"})
    assert "also broken" in str(error)
    assert "toleration-vs-grace" in str(error)
    assert "startup-grace-vs-grace" in str(error)


def test_budget_can_be_raised_for_a_big_control_plane():
    profile = build_profile(dict(FACTS, node_count=1000), "aggressive", heartbeat_budget={"writes_per_second": 5000})
    assert profile["load"]["writes_per_second"] > 2000


def test_stock_defaults_report_instead_of_refusing():
    # Kubernetes' own 40s/50s grace with 10s Lease renewals breaks the >5-heartbeat rule.
    profile = build_profile(FACTS, "kubernetes-default")
    assert [v["rule"] for v in profile["violations"]] == ["heartbeat-retries"]


def test_stock_defaults_with_overrides_are_judged():
    error = refused(preset="kubernetes-default", overrides={"unreachable_toleration_seconds": 30})
    assert error.rule == "heartbeat-retries"


@pytest.mark.parametrize("preset", ["balanced", "fast", "aggressive"])
def test_presets_are_consistent_at_100_nodes(preset):
    assert build_profile(dict(FACTS, node_count=100), preset)["violations"] == []


@pytest.mark.parametrize("preset", ["balanced", "fast", "aggressive"])
def test_a_preset_gives_the_kubelet_the_http2_environment_so_it_does_not_warn_about_it(preset):
    """Issue 34: every preset warned about the HTTP/2 health check although it applies the environment that fixes it."""
    profile = build_profile(FACTS, preset)
    assert "http2-health-check" not in [w["rule"] for w in profile["warnings"]]
    env = profile["kubelet_environment"]
    total = int(env["HTTP2_READ_IDLE_TIMEOUT_SECONDS"]) + int(env["HTTP2_PING_TIMEOUT_SECONDS"])
    assert total < {"balanced": 20, "fast": 4, "aggressive": 3}[preset]  # the grace period


def test_the_audit_judges_the_http2_health_check_by_the_kubelets_own_environment():
    fast = build_profile(FACTS, "fast")
    without = audit_timeline(fast["settings"], FACTS)
    assert [w["rule"] for w in without["warnings"]] == ["http2-health-check", "tcp-retries-rfc1122"]
    assert "(HTTP2_READ_IDLE_TIMEOUT_SECONDS 30 + HTTP2_PING_TIMEOUT_SECONDS 15 = 45s)" in without["warnings"][0]["message"]
    live = dict(fast["settings"], kubelet_environment={"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "1",
                                                       "HTTP2_PING_TIMEOUT_SECONDS": "1"})
    assert [w["rule"] for w in audit_timeline(live, FACTS)["warnings"]] == ["tcp-retries-rfc1122"]
    # Only the read idle timeout set: client-go's 15 s ping timeout still outlasts fast's 4 s grace.
    half = dict(fast["settings"], kubelet_environment={"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "1"})
    assert "(HTTP2_READ_IDLE_TIMEOUT_SECONDS 1 + HTTP2_PING_TIMEOUT_SECONDS 15 = 16s)" in \
        audit_timeline(half, FACTS)["warnings"][0]["message"]
    off = dict(fast["settings"], kubelet_environment={"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "0",
                                                      "HTTP2_PING_TIMEOUT_SECONDS": "1"})
    assert "turns client-go's HTTP/2 health check off" in audit_timeline(off, FACTS)["warnings"][0]["message"]


def test_defaults_on_1_32_need_no_http2_environment_but_1_31_do():
    assert build_profile(FACTS, "kubernetes-default")["kubelet_environment"] == {}
    old = dict(FACTS, kubernetes_version="1.31.0")
    assert build_profile(old, "kubernetes-default")["kubelet_environment"] != {}
    # A 1.31 cluster on its defaults (40 s grace) without that environment: the audit warns.
    assert "http2-health-check" in [w["rule"] for w in audit_timeline({}, old)["warnings"]]
    assert "http2-health-check" not in [w["rule"] for w in audit_timeline({}, FACTS)["warnings"]]


def test_numbers_from_the_command_line_are_accepted():
    # ansible-playbook -e failover_detect_seconds=10 passes strings
    profile = build_profile(FACTS, detect_seconds="10", evict_seconds="60", network_rtt_ms="2")
    assert profile["timeline"]["not_ready"]["expected"] <= 10
    assert build_profile(FACTS, preset="fast", detect_seconds="", evict_seconds=None)["preset"] == "fast"
