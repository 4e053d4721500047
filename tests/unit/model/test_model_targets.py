"""Explicit detect/evict targets pick the cheapest consistent settings that meet them."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile

FACTS = {"kubernetes_version": "1.35.4", "node_count": 50}


@pytest.mark.parametrize("detect", [4.2, 6, 10, 20, 45, 120])
def test_detection_target_is_met_and_consistent(detect):
    profile = build_profile(FACTS, detect_seconds=detect)
    assert profile["preset"] == "custom"
    assert profile["timeline"]["not_ready"]["expected"] <= detect
    assert profile["violations"] == []


def test_slower_targets_are_cheaper():
    loads = [build_profile(FACTS, detect_seconds=d)["load"]["writes_per_second"] for d in (5, 10, 30, 60)]
    assert loads == sorted(loads, reverse=True)
    assert loads[0] > loads[-1]


def test_a_slightly_longer_lease_would_miss_the_target():
    profile = build_profile(FACTS, detect_seconds=10)
    lease = profile["settings"]["kubelet"]["nodeLeaseDurationSeconds"]
    longer = build_profile(FACTS, preset="custom", detect_seconds=60,
                           overrides={"node_lease_duration_seconds": lease + 1})
    assert longer["settings"]["kubelet"]["nodeLeaseDurationSeconds"] == lease + 1


@pytest.mark.parametrize("detect, evict", [(5, 30), (10, 60), (30, 300)])
def test_eviction_target(detect, evict):
    profile = build_profile(FACTS, detect_seconds=detect, evict_seconds=evict)
    assert profile["timeline"]["taint_eviction"]["expected"] <= evict
    assert profile["timeline"]["taint_eviction"]["expected"] > evict - 1.5


def test_evict_only_keeps_stock_detection_time_on_consistent_settings():
    profile = build_profile(FACTS, evict_seconds=120)
    stock = build_profile(FACTS, "kubernetes-default")
    assert profile["violations"] == []
    assert profile["timeline"]["not_ready"]["expected"] <= stock["timeline"]["not_ready"]["expected"]
    assert profile["timeline"]["not_ready"]["expected"] > stock["timeline"]["not_ready"]["expected"] - 5
    assert profile["timeline"]["taint_eviction"]["expected"] <= 120
