"""The power event's age is measured when it arrived at the rulebook, not when its run starts (issue 38, item 4).

Two nodes behind one PDU lose power together: the rulebook runs their incidents one after the other, and the
second run may start minutes after its event. The rulebook says when it received the event, on its own clock
(ansible-rulebook's meta.received_at, passed as power_event_received); node-outage bounds the age at that
arrival and never compares the BMC's time with its own wall clock. The proofs (BMC Off twice, Lease silent since
the event) are made as on every run."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from incident_fakes import T0, lease
from incident_scenario import options, setup

QUEUED = 330  # the first node's run took 5.5 minutes: the second node's run starts this long after its event
EVENT = T0 - QUEUED


def queued_setup():
    """w3 powered off at EVENT (its Lease last renewed 3 s before), still Ready in the API; the run starts at T0."""
    cluster, clock, power = setup("off", w3_ready="True")
    cluster.node_leases["w3"] = lease("w3", EVENT - 3)
    return cluster, clock, power


def run(cluster, clock, power, received, **overrides):
    opts = options(power_event_time=format_time(EVENT), power_event_received=received, **overrides)
    return OutageRun(cluster, power, opts, clock).run()


def test_a_run_that_waited_in_the_queue_is_not_refused_as_stale():
    cluster, clock, power = queued_setup()
    result = run(cluster, clock, power, format_time(EVENT + 1))  # received one second after the power-off
    assert result["changed"] and has_out_of_service_taint(cluster.nodes["w3"])
    assert [p["name"] for p in result["record"]["proofs"]] == ["lease-silent", "power-off"]  # proofs made all the same


def test_an_event_already_old_when_it_arrived_is_refused_with_what_to_do():
    cluster, clock, power = queued_setup()
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match=r"\[power-event-time\].*301s old when the rulebook received it") as raised:
        run(cluster, clock, power, format_time(EVENT + 301))
    assert cluster.snapshot() == before
    message = str(raised.value)
    assert "without power_event_time" in message and "NTP" in message  # names what the user should do


def test_an_event_from_the_future_of_its_arrival_is_refused():
    cluster, clock, power = queued_setup()
    with pytest.raises(RefusedError, match=r"\[power-event-time\].*60s in the future when the rulebook received it"):
        run(cluster, clock, power, format_time(EVENT - 60))


def test_a_malformed_arrival_time_is_refused():
    cluster, clock, power = queued_setup()
    with pytest.raises(RefusedError, match=r"power_event_received 'yesterday' is not an RFC 3339 time"):
        run(cluster, clock, power, "yesterday")


def test_without_an_arrival_time_the_run_start_is_the_arrival():
    """A run started by hand receives its event when it starts: the old bound, for that case only."""
    cluster, clock, power = queued_setup()
    with pytest.raises(RefusedError, match=r"330s old when the run started"):
        run(cluster, clock, power, None)
