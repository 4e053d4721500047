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


def phase(timeline, name):
    return next(p["at"] for p in timeline["phases"] if p["name"] == name)


# From the last proof's moment to the pod Ready: the re-check after it, the taint, the replacement (expected).
AFTER_PROOFS = remediated.RECHECK_AFTER_DUE_SECONDS + remediated.PROOF_TO_TAINT[1] + remediated.TAINT_TO_STATEFULSET_READY[1]


# The rows the benchmark page shows were measured on commit 75c96f0; the in-order variant models that code.
def test_the_code_that_measured_the_page_is_predicted_near_each_measured_median():
    in_order = {"proof_order": remediated.IN_ORDER}
    assert remediated.remediated_timeline(STOCK, "node-watch", **in_order)["not_ready_seconds"] == 60
    assert abs(expected(STOCK, **in_order) - MEASURED["kubernetes-default"]) <= 3
    assert abs(expected(FAST, remediation=remediation_settings(FAST), **in_order) - MEASURED["fast"]) <= 3
    timeline = remediated.remediated_timeline(STOCK, "power-event", **in_order)
    assert abs(timeline["statefulset_replaced"]["expected"] - MEASURED["power-event"]) <= 3
    assert timeline["not_ready_seconds"] is None
    assert "lease silence" in timeline["binds"] and "Off confirmation" in timeline["binds"]


def test_node_outage_today_is_the_default_proof_order():
    assert remediated.remediated_timeline(STOCK)["proof_order"] == remediated.OVERLAPPED
    with pytest.raises(ValueError, match="unknown proof_order"):
        remediated.remediated_timeline(STOCK, proof_order="sequential")


@pytest.mark.parametrize("timings, settings, wait", [(STOCK, None, 60), (FAST, remediation_settings(FAST), 20)])
def test_the_node_watch_taints_right_after_the_notready_wait_the_off_pair_and_lease_watch_inside_it(timings, settings, wait):
    """The old formula added the 5 s Off confirmation (and half a poll) after the wait."""
    timeline = remediated.remediated_timeline(timings, "node-watch", settings)
    wait_over = phase(timeline, "not_ready_wait_over")
    assert wait_over["expected"] == pytest.approx(phase(timeline, "not_ready")["expected"] + wait - 0.5)
    for bound in ("min", "expected", "max"):  # the best, expected and worst case of each
        assert phase(timeline, "lease_watch_over")[bound] < wait_over[bound]
        assert phase(timeline, "off_confirmed")[bound] < wait_over[bound]
    assert timeline["binds"] == "the NotReady wait"
    assert timeline["statefulset_replaced"]["expected"] == pytest.approx(wait_over["expected"] + AFTER_PROOFS)


def test_the_lease_watch_lasts_a_renew_interval_plus_the_margin_from_the_runs_first_check():
    stock = remediated.remediated_timeline(STOCK, "node-watch")  # 40 s Lease: 10 s + lease_margin_seconds 10 s
    assert phase(stock, "lease_watch_over")["expected"] == pytest.approx(phase(stock, "first_check")["expected"] + 20)
    # a margin longer than the wait makes the watch bind, even on a run started at NotReady
    slow = remediated.remediated_timeline(FAST, "node-watch", {"not_ready_seconds": 20, "lease_margin_seconds": 40})
    assert slow["binds"] == "the Lease watch"
    watch_over = phase(slow, "lease_watch_over")
    assert watch_over["expected"] == pytest.approx(phase(slow, "first_check")["expected"] + 0.75 + 40)
    assert slow["statefulset_replaced"]["expected"] == pytest.approx(watch_over["expected"] + AFTER_PROOFS)


def test_an_off_confirmation_longer_than_the_waits_binds_from_the_first_reading():
    timeline = remediated.remediated_timeline(FAST, "node-watch", remediation_settings(FAST), off_confirm_seconds=40)
    first = phase(timeline, "first_check")["expected"]
    assert timeline["binds"] == "the Off confirmation"
    assert timeline["statefulset_replaced"]["expected"] == pytest.approx(first + 40 + remediated.PROOF_TO_TAINT[1] + remediated.TAINT_TO_STATEFULSET_READY[1])


def test_the_power_event_path_watches_the_lease_from_the_runs_start_not_from_the_last_renewal():
    """The old formula counted the renew interval + 3 s from the last renewal before the power-off (12.85 s)."""
    timeline = remediated.remediated_timeline(STOCK, "power-event")
    first = phase(timeline, "first_check")["expected"]
    watch_over = phase(timeline, "lease_watch_over")
    assert watch_over["expected"] == pytest.approx(first + 10 + 3)  # renew interval 10 s + POWER_EVENT margin 3 s
    assert phase(timeline, "off_confirmed")["expected"] == pytest.approx(first + remediated.OFF_CONFIRM_SECONDS)
    assert timeline["binds"] == "the Lease watch"
    assert timeline["statefulset_replaced"]["expected"] == pytest.approx(watch_over["expected"] + AFTER_PROOFS)
    assert timeline["statefulset_replaced"]["expected"] > MEASURED["power-event"] + 5


def test_a_run_started_late_by_the_alert_still_watches_the_lease_for_its_whole_time():
    watch = expected(FAST, remediation=remediation_settings(FAST))
    alert = remediated.remediated_timeline(FAST, "alert", remediation_settings(FAST))
    assert alert["statefulset_replaced"]["min"] > 4 + remediated.ALERT_FOR_SECONDS + remediated.GROUP_WAIT_SECONDS
    assert alert["statefulset_replaced"]["expected"] > watch + 60
    assert phase(alert, "not_ready_wait_over")["max"] < phase(alert, "first_check")["min"]
    watch_over = phase(alert, "lease_watch_over")
    assert watch_over["expected"] == pytest.approx(phase(alert, "first_check")["expected"] + 0.75 + 10)
    assert alert["binds"] == "the Lease watch"
    assert alert["statefulset_replaced"]["expected"] == pytest.approx(watch_over["expected"] + AFTER_PROOFS)
    quick = expected(FAST, "alert", remediation=remediation_settings(FAST), scrape_interval=5, evaluation_interval=5, group_wait=0)
    assert quick < alert["statefulset_replaced"]["expected"]


@pytest.mark.parametrize("trigger", remediated.TRIGGERS)
@pytest.mark.parametrize("order", remediated.PROOF_ORDERS)
def test_every_phase_is_a_window_and_the_pod_is_ready_last(trigger, order):
    phases = remediated.remediated_timeline(FAST, trigger, remediation_settings(FAST), proof_order=order)["phases"]
    names = [p["name"] for p in phases]
    assert names[-2:] == ["out_of_service_taint", "statefulset_replaced"]
    assert names[0] == ("event_in_rulebook" if trigger == "power-event" else "not_ready")
    for each in phases:
        assert each["at"]["min"] <= each["at"]["expected"] <= each["at"]["max"]
        assert each["at"]["expected"] <= phases[-1]["at"]["expected"]


def test_a_runs_own_first_check_replaces_the_modelled_start_up_and_moves_the_lease_watch_with_it():
    """A busy machine starts the proofs late; the benchmark predicts each run from its own moments."""
    quiet = remediated.remediated_timeline(STOCK, "power-event")
    late = remediated.remediated_timeline(STOCK, "power-event", observed={"first_check": 30})
    assert phase(late, "first_check") == {"min": 30, "expected": 30, "max": 30}
    assert phase(late, "lease_watch_over")["expected"] == pytest.approx(30 + 10 + 3)
    assert late["statefulset_replaced"]["expected"] == pytest.approx(30 + 13 + AFTER_PROOFS)
    assert late["statefulset_replaced"]["expected"] > quiet["statefulset_replaced"]["expected"] + 20
    # on the heartbeat path a first check inside the NotReady wait changes nothing: the wait binds
    fast = remediation_settings(FAST)
    modelled = remediated.remediated_timeline(FAST, "node-watch", fast)
    early = remediated.remediated_timeline(FAST, "node-watch", fast, observed={"not_ready": 4.0, "first_check": 8.0})
    assert early["binds"] == "the NotReady wait"
    assert early["statefulset_replaced"]["expected"] == pytest.approx(4.0 + 20 - 0.5 + AFTER_PROOFS)
    assert phase(modelled, "not_ready")["min"] < phase(modelled, "not_ready")["max"]
    # one that comes late enough lets the Lease watch bind instead
    starved = remediated.remediated_timeline(FAST, "node-watch", fast, observed={"not_ready": 4.0, "first_check": 20.0})
    assert starved["binds"] == "the Lease watch"
    assert starved["statefulset_replaced"]["expected"] == pytest.approx(20 + 0.75 + 10 + AFTER_PROOFS)
    with pytest.raises(ValueError, match="cannot observe taint"):
        remediated.remediated_timeline(STOCK, observed={"taint": 1})


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
