"""The power-event path of node-outage (issue 13): a BMC said the node powered off; the node may still be Ready.

Proofs: event time valid and recent; Lease not renewed since the event and older than one renew interval plus the
margin; BMC Off twice with identity; storm/quorum/lock as everywhere (the Ready target counts as unhealthy).
Every refusal names its reason and changes nothing."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError, ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history, timeline
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint, is_ready
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.power_event import check_event_age, parse_event_time
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import LeaseWatch
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from incident_fakes import T0, FakeClock, FakePower, lease
from incident_scenario import options, setup

EVENT = T0 - 20  # the BMC's ResourcePoweredOff, 20 s before the run starts


def event_setup(power_state="off", renewed=EVENT - 3, event=EVENT):
    """w3 still Ready in the API (the node lifecycle controller has not noticed yet), its Lease last renewed
    ``renewed``; returns cluster, clock, power and the event time text."""
    cluster, clock, power = setup(power_state, w3_ready="True")
    cluster.node_leases["w3"] = lease("w3", renewed)
    return cluster, clock, power, format_time(event)


def run(cluster, clock, power, event_text, **overrides):
    return OutageRun(cluster, power, options(power_event_time=event_text, **overrides), clock).run()


def refused_without_change(cluster, clock, power, event_text, error, match, same_nodes=True, **overrides):
    """``same_nodes=False`` for tests that change a Node themselves (its status) while the run waits."""
    before = cluster.snapshot()
    with pytest.raises(error, match=match) as raised:
        run(cluster, clock, power, event_text, **overrides)
    after = cluster.snapshot()
    assert after == before if same_nodes else after[1:] == before[1:]
    assert not has_out_of_service_taint(cluster.nodes["w3"])
    assert not [c for c in cluster.calls if c[0] in ("patch_node", "force_delete_pod", "delete_volume_attachment")]
    return str(raised.value)


# -- the path end to end --------------------------------------------------------------------------


def test_a_ready_node_with_a_silent_lease_and_its_bmc_off_is_failed_over():
    cluster, clock, power, event = event_setup()
    tainted_while = {}

    def watch(now):  # was the node still Ready in the API when the taint appeared?
        if has_out_of_service_taint(cluster.nodes["w3"]) and "ready" not in tainted_while:
            tainted_while["ready"] = is_ready(cluster.nodes["w3"])

    clock.controllers.insert(0, watch)
    result = run(cluster, clock, power, event)
    w3 = cluster.nodes["w3"]
    rec = records.read(w3)
    assert has_out_of_service_taint(w3) and tainted_while == {"ready": True}
    assert rec["phase"] == records.OUTAGE_COMPLETE
    assert rec["trigger"] == "power-event"
    assert rec["power_event"]["time"] == event
    assert rec["first_not_ready"] is None
    assert [p["name"] for p in rec["proofs"]] == ["lease-silent", "power-off"]
    assert "OFF in two readings" in rec["proofs"][1]["detail"]
    assert sorted(rec["pods"]["force_deleted"]) == ["app/db-0", "app/web-123-abc"]
    tainted = next(body for _ns, body in cluster.events if body["reason"] == "FailoverTainted")
    assert f"trigger power-event at {event}" in tainted["message"]
    assert history.read(cluster, "nodeguard-history", "w3")[-1]["power_event"]["time"] == event
    assert result["changed"] and [p["name"] for p in result["proofs"]] == ["lease-silent", "power-off"]


def test_the_heartbeat_path_records_its_trigger_too():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    assert records.read(cluster.nodes["w3"])["trigger"] == "heartbeat"


def test_proof_timeout_waits_for_the_lease_to_age():
    # event 2 s ago, last renewal 1 s before it: the Lease is 3 s old, it must pass 10 + 10 s
    cluster, clock, power, event = event_setup(renewed=T0 - 3, event=T0 - 2)
    run(cluster, clock, power, event, proof_timeout=40)
    assert has_out_of_service_taint(cluster.nodes["w3"])
    assert clock.now() - (T0 - 3) > 20


def test_the_renew_interval_is_the_leases_own_and_the_margin_an_option():
    # a fast profile's kubelet (leaseDurationSeconds 3) renews every 0.75 s: silent once unchanged 0.75 + 3 s here
    cluster, clock, power, event = event_setup(renewed=T0 - 4, event=T0 - 3.5)
    cluster.node_leases["w3"] = lease("w3", T0 - 4, duration=3)
    run(cluster, clock, power, event, lease_margin_seconds=3)
    assert has_out_of_service_taint(cluster.nodes["w3"])
    # silent at T0 + 3.75, not T0 + 20 (a 40 s Lease): the two Off readings, 5 s apart, are what takes longest
    assert records.read(cluster.nodes["w3"])["steps"]["prove"]["end"] == format_time(T0 + 5)


def test_a_resumed_power_event_incident_does_not_take_the_stale_ready_for_a_return():
    cluster, clock, power, event = event_setup()
    cluster.fail_on["force_delete_pod"] = ClusterError("API unavailable")
    with pytest.raises(ClusterError):
        run(cluster, clock, power, event)
    assert is_ready(cluster.nodes["w3"]) and has_out_of_service_taint(cluster.nodes["w3"])
    # a rerun without the event (by hand, or the heartbeat alert) resumes the same incident
    result = OutageRun(cluster, power, options(), clock).run()
    assert result["action"] == records.RESUME
    assert records.read(cluster.nodes["w3"])["phase"] == records.OUTAGE_COMPLETE


def test_a_node_turning_ready_again_after_the_event_stops_the_wait():
    cluster, clock, power, event = event_setup(renewed=T0 - 3, event=T0 - 2)
    w3 = cluster.nodes["w3"]
    w3["status"]["conditions"][0].update(status="Unknown", lastTransitionTime=format_time(T0 - 1))

    def comes_back(now):
        if now >= T0 + 4:
            w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(T0 + 4))

    clock.controllers.append(comes_back)
    message = refused_without_change(cluster, clock, power, event, ProofError, "became Ready", same_nodes=False, proof_timeout=60)
    assert "lease-silent" in message


# -- bad input: each refused, naming the reason, nothing changed ----------------------------------


@pytest.mark.parametrize("text", ["yesterday", "2026-11-23", "2026-11-23T08:00", "2026-11-23T08:00:00", "2026-13-40T08:00:00Z", ""])
def test_a_malformed_event_time_is_refused(text):
    cluster, clock, power, _event = event_setup()
    refused_without_change(cluster, clock, power, text, RefusedError, r"power-event-time.*RFC 3339|power-event-time.*not a valid time")


def test_an_event_from_the_future_is_refused():
    cluster, clock, power, _event = event_setup()
    message = refused_without_change(cluster, clock, power, format_time(T0 + 60), RefusedError, r"\[power-event-time\].*in the future")
    assert format_time(T0 + 60) in message


def test_a_small_clock_skew_into_the_future_is_accepted():
    check_event_age(T0 + 25, T0, 300)  # no exception


def test_a_stale_event_is_refused():
    cluster, clock, power, _event = event_setup(renewed=T0 - 400)
    refused_without_change(cluster, clock, power, format_time(T0 - 301), RefusedError, r"\[power-event-time\].*older than power_event_max_age_seconds \(300s\)")


def test_the_max_age_is_an_option():
    cluster, clock, power, _event = event_setup(renewed=T0 - 400)
    refused_without_change(cluster, clock, power, format_time(T0 - 61), RefusedError, "power_event_max_age_seconds", power_event_max_age_seconds=60)


def test_a_bmc_that_reads_on_now_is_refused():
    cluster, clock, _power, event = event_setup()
    message = refused_without_change(cluster, clock, FakePower("on"), event, RefusedError, r"\[power-on\]")
    assert f"power event said Off at {event}" in message


def test_a_bmc_that_reads_on_is_refused_at_once_even_with_proof_timeout():
    cluster, clock, _power, event = event_setup()
    refused_without_change(cluster, clock, FakePower("on"), event, RefusedError, r"\[power-on\]", proof_timeout=60)
    assert clock.now() - T0 < 10


def test_a_bmc_that_reads_on_is_not_fenced_on_this_path():
    cluster, clock, _power, event = event_setup()
    power = FakePower("on")
    refused_without_change(cluster, clock, power, event, RefusedError, r"\[power-on\]", fence=True)
    assert power.actions == []


def test_a_lease_renewed_after_the_event_is_refused_naming_both_times():
    cluster, clock, power, event = event_setup(renewed=EVENT + 5)
    message = refused_without_change(cluster, clock, power, event, RefusedError, r"\[lease-renewed\]", proof_timeout=60)
    assert format_time(EVENT + 5) in message and event in message


def test_the_run_watches_the_lease_for_its_silence_window_even_without_proof_timeout():
    # Silence is watched from here, never read off the renewTime: the run waits renew interval + margin (10 + 10 s).
    cluster, clock, power, event = event_setup(renewed=T0 - 30, event=T0 - 2)
    run(cluster, clock, power, event, proof_timeout=0)
    assert has_out_of_service_taint(cluster.nodes["w3"])
    assert records.read(cluster.nodes["w3"])["steps"]["prove"]["end"] == format_time(T0 + 20)


def test_a_lease_without_its_duration_is_no_silence():
    cluster, clock, power, event = event_setup()
    del cluster.node_leases["w3"]["spec"]["leaseDurationSeconds"]
    message = refused_without_change(cluster, clock, power, event, ProofError, "lease-silent")
    assert "no leaseDurationSeconds" in message


def test_a_lease_renewed_while_the_run_waits_is_refused():
    cluster, clock, power, event = event_setup(renewed=T0 - 3, event=T0 - 2)

    def kubelet_lives(now):
        if now >= T0 + 4:
            cluster.node_leases["w3"] = lease("w3", T0 + 4)

    clock.controllers.append(kubelet_lives)
    refused_without_change(cluster, clock, power, event, (ProofError, RefusedError), r"lease-renewed|renewed its Lease", same_nodes=False, proof_timeout=60)


def test_a_bmc_of_another_machine_reading_off_is_no_proof():
    cluster, clock, _power, event = event_setup()
    refused_without_change(cluster, clock, FakePower("off", machine="w2"), event, ProofError, "power-off.*not shown to belong")


def test_the_ready_target_counts_as_unhealthy_in_the_storm_rule():
    cluster, clock, power, event = event_setup()
    cluster.nodes["w2"]["status"]["conditions"][0]["status"] = "Unknown"
    message = refused_without_change(cluster, clock, power, event, RefusedError, r"\[storm\]", max_unhealthy="1")
    assert "w2, w3" in message


def test_a_ready_control_plane_node_is_refused_as_such():
    cluster, clock, power, event = event_setup()
    cluster.nodes["w3"]["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    refused_without_change(cluster, clock, power, event, RefusedError, r"\[control-plane\]")


def test_an_admission_denial_is_reported_with_the_apis_message():
    cluster, clock, power, event = event_setup()
    denial = (
        "patch node w3: API answered 403 Forbidden: ValidatingAdmissionPolicy 'nodeguard-out-of-service-taint' denied request: "
        "nodeguard: node w3 is Ready; the out-of-service taint may only be added to a node whose Ready condition is not True "
        "(powerEventPath is false)"
    )
    cluster.fail_on["patch_node"] = ClusterError(denial)
    message = refused_without_change(cluster, clock, power, event, RefusedError, r"\[taint-refused\]")
    assert denial in message and "powerEventPath true" in message


# -- the pieces -----------------------------------------------------------------------------------


def test_event_times_with_offsets_and_fractions_are_read():
    assert parse_event_time("2026-11-23T09:00:00.123456789+01:00") == pytest.approx(parse_event_time("2026-11-23T08:00:00.123456Z"))
    # an unquoted YAML timestamp in a vars file reaches the module as str(datetime)
    assert parse_event_time("2026-11-23 08:00:00+00:00") == parse_event_time("2026-11-23T08:00:00Z")


def test_the_lease_silent_proof():
    clock = FakeClock()
    watch = LeaseWatch(clock, 10)
    assert not watch.proof(None).ok
    assert not watch.proof(lease("w3", T0 - 600)).ok  # watched for 0 s
    clock.t += 19.9
    assert not watch.proof(lease("w3", T0 - 600)).ok
    clock.t += 0.1
    proof = watch.proof(lease("w3", T0 - 600))
    assert proof.ok and proof.name == "lease-silent" and "unchanged for 20.0s" in proof.detail


def test_the_timeline_of_a_power_event_incident_counts_from_the_event():
    cluster, clock, power, event = event_setup()
    run(cluster, clock, power, event)
    rows = timeline.rows(records.read(cluster.nodes["w3"]))
    assert rows[0] == {"event": "power event (BMC: Off)", "time": event, "seconds": 0}
    taint = next(r for r in rows if r["event"] == "out-of-service taint added")
    assert taint["seconds"] > 20  # the run started 20 s after the event


def test_check_mode_proves_on_the_power_event_path_and_changes_nothing():
    cluster, clock, power, event = event_setup()
    before = cluster.snapshot()
    result = OutageRun(cluster, power, options(power_event_time=event), clock, check_mode=True).run()
    assert cluster.snapshot() == before and not result["changed"]
    assert [(p["name"], p["ok"]) for p in result["proofs"]] == [("lease-silent", True), ("power-off", True)]


def test_the_two_off_readings_overlap_the_wait_for_the_lease():
    # Lease watched from T0: silent after 10 + 10 s, i.e. at T0 + 20. The first Off reading is taken at T0,
    # so the one that confirms it can come as soon as the Lease is silent, not off_confirm_seconds later.
    cluster, clock, power, event = event_setup(renewed=T0 - 3, event=T0 - 2)
    tainted = {}
    clock.controllers.insert(0, lambda now: tainted.setdefault("at", now) if has_out_of_service_taint(cluster.nodes["w3"]) else None)
    run(cluster, clock, power, event, proof_timeout=40)
    rec = records.read(cluster.nodes["w3"])
    assert "OFF in two readings 20s apart" in rec["proofs"][1]["detail"]  # T0 to T0 + 20
    assert tainted["at"] - T0 < 20 + 5


def test_a_reading_that_is_not_off_starts_the_pair_again():
    # Off at the start, unknown for a moment at T0 + 15, Off again at T0 + 16: the pair counts from T0 + 16, so the
    # Lease being silent at T0 + 18 is not enough: the confirming reading comes off_confirm_seconds after T0 + 16.
    cluster, clock, power, event = event_setup(renewed=T0 - 3, event=T0 - 2)
    flips = {T0 + 15: "unknown", T0 + 16: "off"}
    tainted = {}

    def tick(now):
        power.state = flips.get(now, power.state)
        if has_out_of_service_taint(cluster.nodes["w3"]):
            tainted.setdefault("at", now)

    clock.controllers.insert(0, tick)
    run(cluster, clock, power, event, proof_timeout=40)
    assert tainted["at"] >= T0 + 16 + 5
    assert "OFF in two readings 5s apart" in records.read(cluster.nodes["w3"])["proofs"][1]["detail"]


def test_the_run_checks_again_when_the_lease_turns_silent_not_a_poll_interval_later():
    # Silent after 10 + 10 s watched, at T0 + 20: with a 3 s poll the run would see it at T0 + 21; it wakes at T0 + 20.1.
    cluster, clock, power, event = event_setup(renewed=T0 - 3, event=T0 - 2)
    run(cluster, clock, power, event, proof_timeout=40, poll_interval=3)
    assert records.read(cluster.nodes["w3"])["steps"]["prove"]["end"] == format_time(T0 + 20.1)


def test_an_attestation_on_the_power_event_path_is_read_once():
    # A statement (manual attestation) shows the same words off_confirm_seconds later: no wait for a second look.
    cluster, clock, power, event = event_setup()
    power.statement = True
    run(cluster, clock, power, event)
    rec = records.read(cluster.nodes["w3"])
    assert "read once" in rec["proofs"][1]["detail"] and "two readings" not in rec["proofs"][1]["detail"]
    assert 5 not in clock.sleeps and 5.0 not in clock.sleeps
