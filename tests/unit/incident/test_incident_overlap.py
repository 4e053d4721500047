"""Issue 23 item 1: proofs overlapped with waits, never weakened.

One watch-while-waiting loop polls the Node's Ready condition, its Lease and its power source on one monotonic
schedule. The BMC's Off readings (identity shown) are taken during the NotReady wait (heartbeat path) or from the
run's start (power-event path), so the taint follows the last wait at once. Two Off readings off_confirm_seconds
apart are still required, the last one is taken when the other proofs hold, and every reading is on the incident's
timeline."""

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import timeline
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import MAX_READINGS_KEPT, OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time, parse_time
from incident_fakes import T0, lease, node
from incident_scenario import options, setup


def seconds(stamp) -> float:
    return parse_time(stamp) - T0


def power_readings(rec) -> list:
    return [(seconds(r["time"]), r["result"]) for r in rec["readings"] if r["reading"] == "power"]


def held_at(rec, proof) -> float:
    return next(seconds(r["time"]) for r in rec["readings"] if r["reading"] == proof)


def test_heartbeat_off_readings_are_taken_during_the_not_ready_wait_and_the_taint_follows_it_at_once():
    # The run starts at the first NotReady (a node watch); NotReady must last 20 s, the Lease watch takes 10 + 10 s.
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node("w3", ready="Unknown", since=T0)
    OutageRun(cluster, power, options(not_ready_seconds=20, proof_timeout=60), clock).run()
    rec = records.read(cluster.nodes["w3"])
    readings = power_readings(rec)
    assert readings[0] == (0, "OFF (redfish, identity shown)")  # the first Off reading at once, not after the wait
    assert held_at(rec, "not-ready") == 20 and 20 <= held_at(rec, "lease-stale") <= 20.1
    taint = seconds(rec["steps"]["taint"]["end"])
    assert taint - 20 < 0.2, "the taint waited after NotReady lasted 20 s"  # was 25: then the 5 s Off confirmation
    proof = next(p for p in rec["proofs"] if p["name"] == "power-off")
    assert "OFF in two readings 20s apart" in proof["detail"]  # still two readings, off_confirm_seconds (5) apart at least
    assert readings[-1][0] >= held_at(rec, "not-ready")  # the pair's last reading is taken when the other proofs hold


def test_heartbeat_off_pair_still_needs_off_confirm_seconds_when_the_other_proofs_hold_sooner():
    # Started long after NotReady (an alert with for: 60s): the 20 s Lease watch binds; with off_confirm_seconds 30
    # the pair's second reading is due later still, and the run waits for exactly what is left of it.
    cluster, clock, power = setup()
    power.config = {"off_confirm_seconds": 30}
    OutageRun(cluster, power, options(), clock).run()
    rec = records.read(cluster.nodes["w3"])
    readings = power_readings(rec)
    assert readings[0][0] == 0
    assert readings[-1][0] >= 30 and "OFF in two readings 30s apart" in rec["proofs"][2]["detail"]


def test_heartbeat_a_reading_that_is_not_off_starts_the_pair_again():
    cluster, clock, power = setup()
    states = iter(["off", "on"])  # Off at the start, On a second later (a reboot), Off from then on

    def status():
        power.state = next(states, "off")
        return type(power).status(power)

    power.status = status
    OutageRun(cluster, power, options(proof_timeout=60), clock).run()
    rec = records.read(cluster.nodes["w3"])
    assert [r for _t, r in power_readings(rec)][:3] == ["OFF (redfish, identity shown)", "ON (redfish, identity shown)", "OFF (redfish, identity shown)"]
    proof = next(p for p in rec["proofs"] if p["name"] == "power-off")
    assert "OFF in two readings 18s apart" in proof["detail"]  # from the Off after the On (T0 + 2), not from the start


def test_power_event_first_off_reading_is_taken_as_the_run_starts():
    cluster, clock, power = setup(w3_ready="True")
    cluster.node_leases["w3"] = lease("w3", T0 - 23)
    OutageRun(cluster, power, options(power_event_time=format_time(T0 - 20), lease_margin_seconds=3), clock).run()
    rec = records.read(cluster.nodes["w3"])
    readings = power_readings(rec)
    assert readings[0][0] == 0  # before any wait
    silent = held_at(rec, "lease-silent")
    assert 13 <= silent <= 13.2  # 40/4 + 3 s watched from the first read
    assert seconds(rec["steps"]["taint"]["end"]) - silent < 0.2
    assert "OFF in two readings 13s apart" in rec["proofs"][1]["detail"]


def test_the_timeline_shows_the_readings_between_the_start_and_the_proof():
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node("w3", ready="Unknown", since=T0)
    OutageRun(cluster, power, options(not_ready_seconds=20, proof_timeout=60), clock).run()
    rows = timeline.rows(records.read(cluster.nodes["w3"]))
    events = [r["event"] for r in rows]
    assert events[0] == "node NotReady (first seen)"
    assert events[1].startswith("lease: watch started")
    assert events[2] == "power: OFF (redfish, identity shown)"
    proven = events.index("power-off proven")
    assert any(e.startswith("not-ready: holds") for e in events[:proven])
    assert any(e.startswith("lease-stale: holds") for e in events[:proven])
    assert [r["seconds"] for r in rows[:proven]] == sorted(r["seconds"] for r in rows[:proven])


def test_a_long_wait_keeps_its_first_and_last_readings_and_every_held_proof():
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node("w3", ready="Unknown", since=T0)
    OutageRun(cluster, power, options(not_ready_seconds=120, proof_timeout=180), clock).run()  # about 120 power readings
    rec = records.read(cluster.nodes["w3"])
    assert len(rec["readings"]) == MAX_READINGS_KEPT
    assert rec["readings"][0]["reading"] == "lease" and power_readings(rec)[0][0] == 0
    assert 20 <= held_at(rec, "lease-stale") <= 20.1 and held_at(rec, "not-ready") == 120
    assert power_readings(rec)[-1][0] >= 120
