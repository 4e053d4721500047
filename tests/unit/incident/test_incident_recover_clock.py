"""node-recover reads no kubelet clock (issue 38, item 8).

"Ready for healthy_seconds" and "fresh Lease" are measured on the controller's own monotonic clock, from its own
reads: Ready counts from the first read that saw the node Ready, and the Lease is fresh once this run saw it change
(proofs.LeaseWatch, the watch node-outage proves silence with). Before this fix both compared the kubelet's
timestamps (the Ready condition's lastTransitionTime, the Lease's renewTime) with the controller's wall clock: a
kubelet 35 s behind was untainted 34 s early, and one ahead made a Lease it no longer renewed look fresh.
"""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import NotRecoveredYetError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import LeaseWatch
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from incident_fakes import T0, FakeClock, FakePower, lease, renewing_lease
from incident_scenario import options, setup

HEALTHY = 60


def after_outage():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    clock.controllers.clear()  # the outage is over: only what a test adds acts from here on
    return cluster, clock


def kubelet(cluster, clock, skew: float, renews: bool = True) -> float:
    """w3 back after a reboot: Ready since now, its kubelet's clock ``skew`` seconds off ours (negative: behind). It
    writes the Ready transition and each renewTime by that clock, and renews every 10 s if ``renews``. Returns the
    monotonic time it became Ready."""
    w3 = cluster.nodes["w3"]
    w3["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(clock.now() + skew))
    stop = renewing_lease(cluster, clock, "w3", skew=skew)
    if not renews:
        stop()
    return clock.monotonic()


def recover(cluster, clock):
    return RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2", healthy_seconds=HEALTHY), clock).run()


def test_a_kubelet_35s_behind_is_not_untainted_before_this_run_saw_it_ready_for_healthy_seconds():
    cluster, clock = after_outage()
    ready_at = kubelet(cluster, clock, skew=-35)
    clock.sleep(26)  # 26 s Ready in fact; 61 s by the kubelet's lastTransitionTime read with our clock
    started = clock.monotonic()
    result = recover(cluster, clock)
    assert result["changed"] and not has_out_of_service_taint(cluster.nodes["w3"])
    assert clock.monotonic() - started >= HEALTHY, "untainted before this run watched it Ready for healthy_seconds"
    assert clock.monotonic() - ready_at >= HEALTHY
    ready = next(c for c in result["checks"] if c["name"] == "ready")
    assert "as watched from here" in ready["detail"]


def test_a_lease_that_looks_fresh_by_a_fast_kubelet_clock_but_is_not_renewed_keeps_the_taint():
    # The kubelet's clock runs 60 s ahead and it last renewed 90 s ago: its renewTime is 30 s old by our clock,
    # within leaseDurationSeconds 40, so it looked fresh. Nothing renews it while this run watches.
    cluster, clock = after_outage()
    kubelet(cluster, clock, skew=60, renews=False)
    clock.sleep(90)
    cluster.nodes["w3"]["status"]["conditions"][0]["lastTransitionTime"] = format_time(clock.now() - 600)
    before = cluster.snapshot()
    with pytest.raises(NotRecoveredYetError, match=r"heartbeat: .*not renewed") as raised:
        recover(cluster, clock)
    assert cluster.snapshot() == before
    assert "watches the node itself" in str(raised.value)


def test_a_node_that_is_not_ready_is_refused_at_once_without_a_wait():
    cluster, clock = after_outage()
    kubelet(cluster, clock, skew=0)
    cluster.nodes["w3"]["status"]["conditions"][0]["status"] = "False"
    slept = len(clock.sleeps)
    with pytest.raises(NotRecoveredYetError, match=r"ready: node is not Ready"):
        recover(cluster, clock)
    assert clock.sleeps[slept:] == []


def test_a_ready_flap_between_two_reads_starts_the_count_again():
    cluster, clock = after_outage()
    kubelet(cluster, clock, skew=0)
    condition = cluster.nodes["w3"]["status"]["conditions"][0]
    flapped = {"done": False}

    def flap(now):  # NotReady and Ready again between two reads, 30 s into the watch: only the transition shows it
        if not flapped["done"] and now >= flap.at:
            flapped["done"] = True
            condition["lastTransitionTime"] = format_time(now)

    flap.at = clock.now() + 30
    clock.controllers.append(flap)
    started = clock.monotonic()
    with pytest.raises(NotRecoveredYetError, match=r"ready: Ready for \d+s as watched from here \(need 60s\)"):
        recover(cluster, clock)
    assert not cluster.calls or ("patch_node", "w3") not in cluster.calls[-1:]
    assert clock.monotonic() - started >= HEALTHY


def test_a_renewal_counts_from_the_read_before_it_and_goes_stale_after_the_lease_duration():
    clock = FakeClock()
    watch = LeaseWatch(clock, 0)
    first = lease("w3", T0 + 3600)  # renewTime an hour ahead by our clock: irrelevant
    assert not watch.renewal_proof(first).ok  # one read shows no renewal
    clock.t += 8
    watch.observe(first)  # unchanged at T0 + 8
    clock.t += 4
    renewed = lease("w3", T0 - 3600)  # changed at T0 + 12, by a clock an hour behind: a renewal all the same
    renewed["metadata"]["resourceVersion"] = "2"
    proof = watch.renewal_proof(renewed)
    assert proof.ok and "at most 4.0s ago as watched from here" in proof.detail  # counted from the read at T0 + 8
    clock.t += 36
    assert watch.renewal_proof(renewed).ok  # 40 s after the read before the change: leaseDurationSeconds
    clock.t += 0.5
    stale = watch.renewal_proof(renewed)
    assert not stale.ok and "limit leaseDurationSeconds 40s" in stale.detail
