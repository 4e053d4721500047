"""The applied profile: what tune-failover stores, what node-outage takes from it, what the audit compares."""

import json

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model import applied
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile

FACTS = {"kubernetes_version": "1.35.4", "node_count": 4, "distribution": "kubeadm"}


def stored(preset="fast", **kwargs):
    """The ConfigMap as the API would return it after tune-failover applied ``preset``."""
    data = applied.record(build_profile(FACTS, preset), "0.1.0", "2026-11-23T05:00:00+00:00", **kwargs)
    return {"metadata": {"name": applied.NAME, "namespace": applied.NAMESPACE, "resourceVersion": "7"}, "data": data}


def test_the_record_holds_what_was_applied_and_reads_back():
    document = applied.read(stored("fast", overrides={"tcp_retries2": 7}))
    assert document["preset"] == "fast"
    assert document["remediation"] == {"not_ready_seconds": 20, "lease_margin_seconds": 10}
    assert document["settings"]["kube_controller_manager"]["node-monitor-grace-period"] == "4s"
    assert document["timeline"]["not_ready"]["expected"] <= 5
    assert (document["distribution"], document["kubernetes_version"]) == ("kubeadm", "1.35.4")
    assert document["collection_version"] == "0.1.0"
    assert document["applied_at"] == "2026-11-23T05:00:00+00:00"
    assert document["overrides"] == {"tcp_retries2": 7}
    assert document["targets"] == {"detect_seconds": None, "evict_seconds": None}


def test_a_tuned_cluster_gives_node_outage_the_presets_wait():
    timing = applied.resolve_timing(None, None, applied.read(stored("fast")))
    assert (timing["not_ready_seconds"], timing["lease_margin_seconds"]) == (20, 10)
    assert timing["source"] == {"not_ready_seconds": "applied-profile", "lease_margin_seconds": "applied-profile"}
    assert "applied profile 'fast'" in timing["detail"] and "not_ready_seconds=20 (applied-profile)" in timing["detail"]


def test_an_explicit_value_wins_over_the_applied_profile():
    timing = applied.resolve_timing(45, None, applied.read(stored("fast")))
    assert timing["not_ready_seconds"] == 45 and timing["source"]["not_ready_seconds"] == "explicit"
    assert timing["lease_margin_seconds"] == 10 and timing["source"]["lease_margin_seconds"] == "applied-profile"


def test_a_cluster_never_tuned_gets_the_stock_values_and_a_line_that_says_so():
    timing = applied.resolve_timing(None, None, applied.read(None))
    assert (timing["not_ready_seconds"], timing["lease_margin_seconds"]) == (60, 10)
    assert set(timing["source"].values()) == {"stock"}
    assert "never tuned" in timing["detail"] and applied.NAME in timing["detail"]


@pytest.mark.parametrize("data, words", [
    ({}, "no profile.json"),
    ({"profile.json": "{not json"}, "not JSON"),
    ({"profile.json": json.dumps({"format": 99})}, "not format 1"),
    ({"profile.json": json.dumps({"format": 1, "remediation": {"not_ready_seconds": "soon"}, "settings": {}})},
     "remediation.not_ready_seconds"),
])
def test_an_unreadable_record_is_refused_not_guessed(data, words):
    with pytest.raises(ProfileError, match=words):
        applied.read({"data": data})


def test_no_drift_on_nodes_that_run_the_applied_profile():
    profile = build_profile(FACTS, "fast")
    nodes = {
        "cp1": {"role": "control_plane", "settings": profile["settings"]},
        # "4.0s" and "4s" are the same duration; a flag left out equals its default.
        "w1": {"role": "worker", "settings": {"kubelet": dict(profile["settings"]["kubelet"]),
                                              "sysctl": profile["settings"]["sysctl"]}},
    }
    assert applied.drift(applied.read(stored("fast")), nodes, "1.35.4") == []


def test_drift_is_reported_per_node_and_setting():
    profile = build_profile(FACTS, "fast")
    worker_kubelet = dict(profile["settings"]["kubelet"], nodeLeaseDurationSeconds=40)
    nodes = {
        "cp1": {"role": "control_plane", "settings": dict(profile["settings"], kube_controller_manager={})},
        "w1": {"role": "worker", "settings": {"kubelet": worker_kubelet, "sysctl": profile["settings"]["sysctl"]}},
        "w2": {"role": "worker", "settings": {}},  # nothing read there (an RKE1 node): skipped
    }
    found = applied.drift(applied.read(stored("fast")), nodes, "1.35.4")
    by_node = {(d["node"], d["setting"]): (d["applied"], d["live"]) for d in found}
    assert by_node[("cp1", "kube_controller_manager.node-monitor-grace-period")] == (4.0, 50.0)
    assert by_node[("w1", "kubelet.nodeLeaseDurationSeconds")] == (3, 40)
    assert not [d for d in found if d["node"] == "w1" and d["setting"].startswith("kube_")]
    assert not [d for d in found if d["node"] == "w2"]


def test_feature_gate_drift_on_1_25():
    facts = dict(FACTS, kubernetes_version="1.25.9")
    data = applied.record(build_profile(facts, "fast"), "0.1.0", "t")
    settings = build_profile(facts, "fast")["settings"]
    nodes = {"cp1": {"role": "control_plane", "settings": dict(settings, kube_controller_manager_feature_gates={})}}
    found = applied.drift(applied.read({"data": data}), nodes, "1.25.9")
    assert {"node": "cp1", "setting": "kube_controller_manager_feature_gates.NodeOutOfServiceVolumeDetach",
            "applied": "true", "live": None} in found


def test_no_applied_profile_means_no_drift():
    assert applied.drift(None, {"cp1": {"role": "control_plane", "settings": {"kubelet": {}}}}, "1.35.4") == []


def test_a_second_run_with_the_same_profile_keeps_the_record_byte_for_byte():
    first = stored("fast")
    again = applied.record(build_profile(FACTS, "fast"), "0.1.0", "2026-11-24T00:00:00+00:00", previous=first)
    assert again == first["data"]
    changed = applied.record(build_profile(FACTS, "balanced"), "0.1.0", "2026-11-24T00:00:00+00:00", previous=first)
    assert json.loads(changed[applied.KEY])["applied_at"] == "2026-11-24T00:00:00+00:00"


def test_the_audit_says_which_profile_and_where_it_drifted():
    profile = build_profile(FACTS, "fast")
    nodes = {"cp1": {"role": "control_plane", "settings": profile["settings"]},
             "w1": {"role": "worker", "settings": {"kubelet": {}, "sysctl": profile["settings"]["sysctl"]}}}
    report = applied.audit(stored("fast"), nodes, "1.35.4")
    assert report["recorded"] and report["preset"] == "fast"
    assert {entry["node"] for entry in report["drift"]} == {"w1"}
    assert "drifted on w1" in report["summary"]
    never = applied.audit(None, nodes, "1.35.4")
    assert not never["recorded"] and never["drift"] == [] and "never tuned" in never["summary"]


def test_the_power_event_path_has_its_own_lease_margin_and_an_explicit_one_wins():
    profile = applied.read(stored("fast"))
    timing = applied.resolve_timing(None, None, profile, power_event=True)
    assert (timing["lease_margin_seconds"], timing["source"]["lease_margin_seconds"]) == (3, "power-event path")
    assert timing["not_ready_seconds"] == applied.resolve_timing(None, None, profile)["not_ready_seconds"]
    assert applied.resolve_timing(None, 7, profile, power_event=True)["lease_margin_seconds"] == 7
    assert applied.resolve_timing(None, None, None)["lease_margin_seconds"] == 10  # the heartbeat path keeps its own
