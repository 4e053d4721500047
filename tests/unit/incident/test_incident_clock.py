"""Issue 20 item 3: no foreign clock in a liveness proof.

The node's Lease is watched on this controller's monotonic clock (its renewTime is a token, never a time to
compare with ours); the power-off proof's age and a manual attestation's expiry count on the monotonic clock and
are checked again before every destructive step; one attestation proves one incident."""

import time

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import OUT_OF_SERVICE_KEY, has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import LeaseWatch
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from ansible_collections.nodeguard.failover.plugins.module_utils.power.readers import reader_for
from incident_fakes import T0, FakeClock, lease
from incident_scenario import options, setup

DESTRUCTIVE = ("patch_node", "force_delete_pod", "delete_volume_attachment")


class SteppedClock(FakeClock):
    """A controller whose wall clock is stepped (NTP, an operator) while its monotonic clock runs on."""

    def __init__(self):
        super().__init__()
        self.wall_offset = 0.0

    def now(self) -> float:
        return self.t + self.wall_offset


def lagging_kubelet(cluster, clock, lag=60.0, every=10.0):
    """w3's kubelet lives and renews its Lease every ``every`` seconds, but its clock runs ``lag`` seconds behind."""
    state = {"next": T0 + every / 2, "version": 1}

    def renew(now):
        if now >= state["next"]:
            state["version"] += 1
            renewed = lease("w3", now - lag)
            renewed["metadata"]["resourceVersion"] = str(state["version"])
            cluster.node_leases["w3"] = renewed
            state["next"] = now + every

    cluster.node_leases["w3"] = lease("w3", T0 - lag)
    clock.controllers.insert(0, renew)


def test_a_live_kubelet_whose_clock_lags_60s_is_refused_on_the_power_event_path():
    # Ready in the API, BMC wrongly reads Off, event "now": the renewTime is always 60 s old by our clock, older than
    # one renew interval plus the margin. On 08a3975 that passed as silence and w3 was tainted and its pods deleted.
    cluster, clock, power = setup("off", w3_ready="True")
    lagging_kubelet(cluster, clock)
    before = cluster.snapshot()[1:]
    with pytest.raises(RefusedError, match=r"\[lease-renewed\].*changed while this run watched it") as raised:
        OutageRun(cluster, power, options(power_event_time=format_time(T0 - 2), lease_margin_seconds=3, proof_timeout=30), clock).run()
    assert "renewTime" in str(raised.value)
    assert cluster.snapshot()[1:] == before
    assert not has_out_of_service_taint(cluster.nodes["w3"])
    assert not [c for c in cluster.calls if c[0] in DESTRUCTIVE]


def test_a_live_kubelet_whose_clock_lags_60s_is_refused_on_the_heartbeat_path():
    # NotReady in the API for 10 minutes (its kubelet reports NotReady: a runtime fault) while it renews its Lease
    # with a clock 60 s behind; the BMC wrongly reads Off. The renewTime is 60 s old by our clock, older than the
    # Lease's 40 s + 10 s margin: before the Lease was watched on the heartbeat path, w3 was tainted and its pods deleted.
    cluster, clock, power = setup("off")
    lagging_kubelet(cluster, clock)
    before = cluster.snapshot()
    with pytest.raises(ProofError, match=r"lease-stale: Lease renewed while watched.*kubelet lives") as raised:
        OutageRun(cluster, power, options(), clock).run()  # proof_timeout 0: waits for the watch, sees the renewal
    assert "renewTime" in str(raised.value)
    assert cluster.snapshot() == before
    assert not [c for c in cluster.calls if c[0] in DESTRUCTIVE]


def test_a_heartbeat_run_waits_for_the_lease_watch_instead_of_refusing_without_proof_timeout():
    # Started long after NotReady (an alert with for: 60s) with the default proof_timeout 0: the Lease (duration 40 s,
    # renewTime 10 minutes old by the kubelet's clock) must still be seen unchanged for 10 s + 10 s from here.
    cluster, clock, power = setup("off")
    OutageRun(cluster, power, options(), clock).run()
    rec = records.read(cluster.nodes["w3"])
    proven = {p["name"]: p for p in rec["proofs"]}
    assert proven["lease-stale"]["ok"] and "unchanged for 20.0s as watched from here" in proven["lease-stale"]["detail"]
    assert "not compared" in proven["lease-stale"]["detail"]
    assert rec["steps"]["prove"]["end"] >= format_time(T0 + 20)


def test_a_heartbeat_run_refuses_at_once_when_the_lease_cannot_be_watched_long_enough():
    cluster, clock, power = setup("off")
    cluster.node_leases["w3"]["spec"]["leaseDurationSeconds"] = 3600  # 900 s + margin: more than one run waits
    before = cluster.snapshot()
    with pytest.raises(ProofError, match=r"lease-stale: the Lease's silence cannot be watched in one run"):
        OutageRun(cluster, power, options(), clock).run()
    assert cluster.snapshot() == before
    assert clock.sleeps == []  # no wait that cannot end in a proof


def test_the_lease_watch_counts_on_the_monotonic_clock_and_reads_the_interval_off_the_lease():
    clock = FakeClock()
    watch = LeaseWatch(clock, 3)
    quiet = lease("w3", T0 - 3600, duration=8)  # renewTime an hour old by our clock: irrelevant
    assert not watch.proof(quiet).ok  # just started watching
    clock.t += 4.9  # 8/4 + 3 = 5 s needed
    assert not watch.proof(quiet).ok
    clock.t += 0.1
    proof = watch.proof(quiet)
    assert proof.ok and "renew interval 2s (leaseDurationSeconds/4) + margin 3s" in proof.detail
    assert not LeaseWatch(clock, 3).proof(None).ok
    assert "no leaseDurationSeconds" in LeaseWatch(clock, 3).proof({"spec": {"renewTime": "x"}}).detail


def test_a_lease_that_changes_while_watched_is_no_silence_whatever_its_renew_time_says():
    clock = FakeClock()
    watch = LeaseWatch(clock, 3)
    watch.observe(lease("w3", T0 - 60))
    clock.t += 30
    later = lease("w3", T0 - 70)  # renewed, by a clock that even went backwards
    proof = watch.proof(later)
    assert not proof.ok and "renewed while watched" in proof.detail


def test_an_attestation_that_expired_does_not_prove_off_for_the_volume_attachment_deletes():
    # The attestation expires 120 s after the run starts; the VolumeAttachments are deleted (opted in) around T0 + 300.
    cluster, clock, _power = setup()
    now = time.time()
    attestation = {"node": "w3", "state": "off", "operator": "jane", "reason": "PDU outlet 7 switched off"}
    attestation.update(not_before=format_time(now - 60), expires=format_time(now + 120))
    power = reader_for({"type": "manual", "attestation": attestation}, "w3", allow_manual=True)
    cluster.controllers = []
    clock.controllers = []  # nothing detaches on its own: the run waits detach_timeout, then deletes
    cluster.pods = [p for p in cluster.pods if p["metadata"]["name"] != "db-0"]
    with pytest.raises(ProofError, match="manual attestation expired"):
        OutageRun(cluster, power, options(detach_timeout=300, delete_volume_attachments=True, proof_max_age_seconds=600), clock).run()
    assert has_out_of_service_taint(cluster.nodes["w3"])  # the taint stays, recorded
    assert not [c for c in cluster.calls if c[0] == "delete_volume_attachment"]
    assert records.read(cluster.nodes["w3"])["steps"]["detach-volumes"]["error"]


def test_the_proof_age_counts_on_the_monotonic_clock_when_the_wall_clock_steps_back():
    # A force-delete hangs 300 s while NTP steps the wall clock back 300 s: by the wall clock the power-off proof
    # is 30 s old at the VolumeAttachment deletes, in fact 330 s: it must be read again (proof_max_age_seconds 60).
    cluster, _clock, power = setup()
    clock = SteppedClock()
    reads = []
    status = power.status
    power.status = lambda: reads.append(clock.t) or status()
    force_delete = cluster.force_delete_pod

    def slow_force_delete(*args):
        if clock.wall_offset == 0:
            clock.t += 300
            clock.wall_offset = -300
        return force_delete(*args)

    cluster.force_delete_pod = slow_force_delete
    OutageRun(cluster, power, options(detach_timeout=30, delete_volume_attachments=True, verify_replacements=False), clock).run()
    assert ("delete_volume_attachment", "csi-abc") in cluster.calls
    assert [r for r in reads if r > T0 + 300], "the power-off proof was not read again before the VolumeAttachment deletes"


def test_one_attestation_proves_one_incident():
    cluster, clock, _power = setup()
    now = time.time()
    attestation = {"node": "w3", "state": "off", "operator": "jane", "reason": "PDU outlet 7 switched off"}
    attestation.update(not_before=format_time(now - 60), expires=format_time(now + 3600))
    power = reader_for({"type": "manual", "attestation": attestation}, "w3", allow_manual=True)
    OutageRun(cluster, power, options(), clock).run()
    first = records.read(cluster.nodes["w3"])["id"]
    # w3 came back and was recovered (taint and record gone, the record kept in the history); then it fails again.
    w3 = cluster.nodes["w3"]
    w3["spec"]["taints"] = [t for t in w3["spec"]["taints"] if t["key"] != OUT_OF_SERVICE_KEY]
    w3["metadata"]["annotations"] = {}
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match=rf"\[attestation-reused\].*already proved incident {first}"):
        OutageRun(cluster, power, options(job_id="job-2"), clock).run()
    assert cluster.snapshot() == before
