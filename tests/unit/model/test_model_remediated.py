"""Remediated timelines per trigger against the lab's measured medians (docs/benchmarks/README.md, make bench 75c96f0)."""

from pathlib import Path

import pytest
import yaml
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageOptions
from ansible_collections.nodeguard.failover.plugins.module_utils.model import remediated
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import preset_timings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import remediation_settings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import DEFAULT_OFF_CONFIRM_SECONDS

REPO = Path(__file__).resolve().parents[3]
V135 = parse_version("1.35.4")
STOCK = preset_timings("kubernetes-default", V135)
FAST = preset_timings("fast", V135)
# Measured medians of the StatefulSet pod Ready elsewhere, seconds after power-off (results.json).
MEASURED = {"kubernetes-default": 116.36, "fast": 31.35, "power-event": 12.2}


def expected(timings, trigger="node-watch", **options):
    return remediated.remediated_timeline(timings, trigger, **options)["statefulset_replaced"]["expected"]


def test_an_untuned_cluster_waits_node_outages_stock_60s_not_the_300s_toleration():
    timeline = remediated.remediated_timeline(STOCK, "node-watch")
    assert timeline["not_ready_seconds"] == 60
    assert abs(timeline["statefulset_replaced"]["expected"] - MEASURED["kubernetes-default"]) <= 3


def test_fast_through_the_node_watch_is_near_its_measured_median():
    assert abs(expected(FAST, remediation=remediation_settings(FAST)) - MEASURED["fast"]) <= 3


def test_the_power_event_path_is_near_its_measured_median_not_the_heartbeat_paths():
    timeline = remediated.remediated_timeline(STOCK, "power-event")
    assert abs(timeline["statefulset_replaced"]["expected"] - MEASURED["power-event"]) <= 3
    assert timeline["not_ready_seconds"] is None
    assert "lease silence" in timeline["binds"] and "Off confirmation" in timeline["binds"]


def test_overlapping_the_off_readings_with_the_notready_wait_saves_the_whole_confirmation():
    for timings, settings in ((STOCK, None), (FAST, remediation_settings(FAST))):
        sequential = expected(timings, remediation=settings)
        overlapped = expected(timings, remediation=settings, overlapped=True)
        assert sequential - overlapped == pytest.approx(remediated.OFF_CONFIRM_SECONDS)


def test_overlapping_on_the_power_event_path_starts_the_confirmation_at_the_runs_start():
    sequential = remediated.remediated_timeline(STOCK, "power-event")
    overlapped = remediated.remediated_timeline(STOCK, "power-event", overlapped=True)
    assert overlapped["statefulset_replaced"]["expected"] < sequential["statefulset_replaced"]["expected"]
    # never earlier than the Lease rule allows: renew interval 10 s + margin 3 s after a renewal at the power-off
    lease = next(p["at"] for p in overlapped["phases"] if p["name"] == "lease_silent")
    assert lease["max"] == pytest.approx(13.1)
    assert overlapped["statefulset_replaced"]["max"] >= lease["max"]


def test_the_alert_path_adds_the_alerts_for_and_alertmanagers_group_wait():
    watch = expected(FAST, remediation=remediation_settings(FAST))
    alert = remediated.remediated_timeline(FAST, "alert", remediation_settings(FAST))
    assert alert["statefulset_replaced"]["min"] > 4 + remediated.ALERT_FOR_SECONDS + remediated.GROUP_WAIT_SECONDS
    assert alert["statefulset_replaced"]["expected"] > watch + 60
    assert alert["binds"].startswith("the run's start")
    quick = expected(FAST, "alert", remediation=remediation_settings(FAST), scrape_interval=5, evaluation_interval=5, group_wait=0)
    assert quick < alert["statefulset_replaced"]["expected"]


def test_phases_are_in_time_order_for_the_node_watch():
    phases = remediated.remediated_timeline(FAST, "node-watch", remediation_settings(FAST))["phases"]
    names = [p["name"] for p in phases]
    assert names[0] == "not_ready" and names[-2:] == ["out_of_service_taint", "statefulset_replaced"]
    for phase in phases:
        assert phase["at"]["min"] <= phase["at"]["expected"] <= phase["at"]["max"]


def test_an_unknown_trigger_is_refused():
    with pytest.raises(ValueError, match="unknown trigger"):
        remediated.remediated_timeline(STOCK, "webhook")


def test_the_collection_settings_the_model_uses_are_the_shipped_ones():
    assert remediated.OFF_CONFIRM_SECONDS == DEFAULT_OFF_CONFIRM_SECONDS
    assert OutageOptions.poll_interval == remediated.POLL_SECONDS
    defaults = yaml.safe_load((REPO / "roles" / "node_outage" / "defaults" / "main.yml").read_text())
    assert defaults["node_outage_poll_interval"] == remediated.POLL_SECONDS
    rules = yaml.safe_load((REPO / "extensions" / "prometheus" / "nodeguard-alerts.yml").read_text())
    (down,) = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == "NodeguardNodeDown"]
    assert down["for"] == f"{remediated.ALERT_FOR_SECONDS:g}s"
