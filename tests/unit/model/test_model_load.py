"""Heartbeat load on both paths, and the issue-5 cost target against the seeds/001 profile."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model.heartbeat import (
    heartbeat_interval,
    heartbeat_load,
    heartbeat_path,
    lease_renew_interval,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import preset_timings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import audit_timeline, build_profile
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import read_settings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version

V135 = parse_version("1.35.4")
SEED_001 = {
    "kubelet": {"nodeStatusUpdateFrequency": "1s"},
    "kube_controller_manager": {"node-monitor-period": "1s", "node-monitor-grace-period": "4s"},
}


def test_defaults_heartbeat_on_the_lease_every_10s():
    timings = preset_timings("kubernetes-default", V135)
    assert lease_renew_interval(timings) == 10
    assert heartbeat_interval(timings) == 10
    assert heartbeat_path(timings) == "lease"
    load = heartbeat_load(timings, 1000)
    assert load["lease_writes_per_second"] == 100
    assert load["node_status_writes_per_second"] == pytest.approx(1000 / 300, abs=0.001)


def test_explicit_update_frequency_drags_the_report_frequency():
    timings, problems, _unused = read_settings(SEED_001, V135)
    assert problems == []
    assert timings.node_status_report_frequency == 1
    assert heartbeat_path(timings) == "node-status"


def test_explicit_report_frequency_is_kept():
    settings = {"kubelet": {"nodeStatusUpdateFrequency": "1s", "nodeStatusReportFrequency": "5m0s"}}
    timings, _unused, _unused = read_settings(settings, V135)
    assert timings.node_status_report_frequency == 300


def test_seed_001_at_1000_nodes_is_1000_full_status_writes_per_second():
    load = audit_timeline(SEED_001, {"kubernetes_version": "1.35.4", "node_count": 1000})["load"]
    assert load["node_status_writes_per_second"] == 1000
    assert load["node_status_bytes_per_second"] == 1000 * load["assumptions"]["node_status_write_bytes"]


def test_fast_preset_costs_at_most_a_fifth_of_seed_001_in_bytes():
    facts = {"kubernetes_version": "1.35.4", "node_count": 1000}
    seed = audit_timeline(SEED_001, facts)["load"]
    fast = build_profile(facts, "fast")["load"]
    assert fast["bytes_per_second"] <= seed["bytes_per_second"] / 5
    # Full Node status writes (the ones every Node watcher receives) drop by far more than 5x.
    assert fast["node_status_writes_per_second"] <= seed["node_status_writes_per_second"] / 100


def test_load_scales_with_nodes_and_uses_given_object_sizes():
    timings = preset_timings("balanced", V135)
    small = heartbeat_load(timings, 100, node_bytes=10000, lease_bytes=500)
    large = heartbeat_load(timings, 1000, node_bytes=10000, lease_bytes=500)
    assert large["writes_per_second"] == pytest.approx(10 * small["writes_per_second"], rel=1e-3)
    assert small["lease_writes_per_second"] == pytest.approx(100 / 3, abs=0.001)
    assert small["lease_bytes_per_second"] == round(100 / 3 * 500)
