"""Timeline windows: detection arithmetic and each later event built on it."""

import itertools

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model.detection import detection_delay
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import preset_timings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import remediation_settings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timeline import (
    FORCE_DETACH_WAIT_SECONDS,
    predict_timeline,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import apply_overrides
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version

V135 = parse_version("1.35.4")
V131 = parse_version("1.31.2")


def test_default_detection_window_on_1_35():
    # grace 50s in 5s ticks, heartbeat every 10s: the last one lands 0-10s before power-off.
    window = predict_timeline(preset_timings("kubernetes-default", V135))["not_ready"]
    assert window == {"min": 40.0, "expected": 47.5, "max": 55.0}


def test_default_grace_is_40s_before_1_32():
    window = predict_timeline(preset_timings("kubernetes-default", V131))["not_ready"]
    assert window["expected"] == 37.5


def test_grace_is_rounded_up_to_whole_monitor_periods():
    timings = apply_overrides(preset_timings("balanced", V135), {"node_monitor_grace_period": "21s"})
    assert detection_delay(timings) == 22


def test_fast_preset_meets_the_5s_detection_target():
    window = predict_timeline(preset_timings("fast", V135))["not_ready"]
    assert window["expected"] <= 5
    assert window["max"] <= 5


def test_fast_preset_meets_the_40s_deployment_target():
    assert predict_timeline(preset_timings("fast", V135))["deployment_replaced"]["max"] <= 40


def test_events_follow_each_other():
    timeline = predict_timeline(preset_timings("balanced", V135))
    order = ["not_ready", "unreachable_taint", "taint_eviction", "deployment_replaced", "force_detach"]
    for earlier, later in itertools.pairwise(order):
        for bound in ("min", "expected", "max"):
            assert timeline[earlier][bound] <= timeline[later][bound]
    assert timeline["taint_eviction"]["expected"] - timeline["unreachable_taint"]["expected"] == 60
    assert timeline["force_detach"]["min"] - timeline["taint_eviction"]["min"] == FORCE_DETACH_WAIT_SECONDS
    assert timeline["endpoint_removed"]["min"] == timeline["not_ready"]["min"]


def test_disable_force_detach_means_never_without_the_taint():
    timings = apply_overrides(preset_timings("fast", V135), {"disable_force_detach_on_timeout": True})
    detach = predict_timeline(timings)["force_detach"]
    assert detach["expected"] is None
    assert "out-of-service" in detach["note"]


def test_statefulset_never_recovers_alone():
    assert predict_timeline(preset_timings("fast", V135))["statefulset_replaced_unremediated"]["expected"] is None


@pytest.mark.parametrize("preset, in_flight, idle", [
    ("kubernetes-default", 924.6, 7875), ("balanced", 102.2, 120), ("fast", 51.0, 60), ("aggressive", 25.4, 30),
])
def test_dead_tcp_rows(preset, in_flight, idle):
    timeline = predict_timeline(preset_timings(preset, V135))
    assert timeline["dead_tcp_in_flight"]["min"] == pytest.approx(in_flight)
    assert timeline["dead_tcp_idle"]["expected"] == idle


def test_remediated_statefulset_follows_detection_and_the_proof_wait():
    timeline = predict_timeline(preset_timings("fast", V135))
    remediated = timeline["statefulset_replaced"]
    assert remediated["min"] > timeline["not_ready"]["min"]
    # 20s NotReady proof (fast's toleration) - 0.5s whole-second transition time + 0.1s to the re-check
    # + 0.7s to the taint + 2s replacement (model/remediated.py); the Off pair and the Lease watch (2.5s + 10s
    # from the run's first check) overlap the wait: no 5s confirmation after it, no half poll
    assert remediated["expected"] - timeline["not_ready"]["expected"] == pytest.approx(22.3)
    assert remediated["max"] <= 60  # issue 5 target with automated remediation


@pytest.mark.parametrize("preset, not_ready_seconds", [
    ("kubernetes-default", 300), ("balanced", 60), ("fast", 20), ("aggressive", 10),
])
def test_remediation_waits_for_the_toleration(preset, not_ready_seconds):
    assert remediation_settings(preset_timings(preset, V135))["not_ready_seconds"] == not_ready_seconds


def test_remediation_waits_at_least_two_grace_periods():
    timings = apply_overrides(preset_timings("fast", V135), {"unreachable_toleration_seconds": 0})
    assert remediation_settings(timings)["not_ready_seconds"] == 8
