"""The per-node lock Lease: one holder per run, expiry observed locally, release that never hides an error."""

import json

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import (
    LockHeldError,
    LockLostError,
    NotRecoveredYetError,
    RefusedError,
    StepTimeoutError,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import HOLDER_ANNOTATION, NodeLock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time, format_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError
from incident_fakes import T0, FakeClock, FakeCluster, FakePower, lease
from incident_scenario import options, setup

KEY = ("ns", "nodeguard-failover-w3")


def held_by(holder, renewed, ttl=60, rv="5"):
    return {
        "metadata": {"name": KEY[1], "resourceVersion": rv},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": ttl, "renewTime": format_micro_time(renewed)},
    }


def lock(cluster, job="me", clock=None, wait=0):
    return NodeLock(cluster, "ns", "w3", job, 60, clock or FakeClock(), wait)


class LiveHolder:
    """A clock controller playing a run that renews its Lease every ``every`` seconds (a conditional replace)."""

    def __init__(self, cluster, every=20):
        self.cluster = cluster
        self.every = every
        self.last = None

    def __call__(self, now):
        if self.last is None:
            self.last = now
        if now - self.last >= self.every and KEY in self.cluster.leases:
            body = dict(self.cluster.leases[KEY])
            body["spec"] = dict(body["spec"], renewTime=format_micro_time(now))
            self.cluster.replace_lease("ns", body)
            self.last = now


def test_acquire_creates_and_release_deletes():
    cluster = FakeCluster([])
    node_lock = lock(cluster)
    node_lock.acquire()
    spec = cluster.leases[KEY]["spec"]
    assert spec["holderIdentity"] == node_lock.identity
    assert spec["leaseDurationSeconds"] == 60
    holder = json.loads(cluster.leases[KEY]["metadata"]["annotations"][HOLDER_ANNOTATION])
    assert holder["job"] == "me" and holder["pid"] > 0 and holder["host"]
    node_lock.release()
    assert KEY not in cluster.leases
    assert node_lock.release_note is None


def test_every_run_has_its_own_identity_even_with_the_same_job_id():
    cluster = FakeCluster([])
    first, second = lock(cluster, job="user@ctl"), lock(cluster, job="user@ctl")
    assert first.identity != second.identity
    assert first.identity.startswith("user@ctl ")


def test_same_job_id_does_not_take_a_live_lock_back():
    # The old default job id user@host (and EDA's eda:<node>:<fingerprint>) took a live lock back at once.
    cluster = FakeCluster([])
    clock = FakeClock()
    orphan = lock(cluster, job="root@ctl", clock=clock)  # e.g. the module orphaned by kill -9 of ansible-playbook
    orphan.acquire()
    rerun = lock(cluster, job="root@ctl", clock=clock)
    with pytest.raises(LockHeldError, match=r"job 'root@ctl' on host .*pid \d+"):
        rerun.acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == orphan.identity


def test_held_lock_refuses_at_once_and_names_the_holder():
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("you", T0 - 10)
    clock = FakeClock()
    with pytest.raises(LockHeldError, match=r"'you'.*lock_wait_seconds of at least 64"):
        lock(cluster, clock=clock).acquire()
    assert clock.sleeps == []
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "you"


def test_an_old_renew_time_alone_is_not_expiry():
    # renewTime two hours behind our clock (the holder's clock is slow, or ours fast): still not taken at once.
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("you", T0 - 7200)
    with pytest.raises(LockHeldError):
        lock(cluster).acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "you"


def test_fast_clock_does_not_steal_a_live_lock():
    # The holder renews every 20 s; this controller's clock is 5 minutes fast. Waiting longer than the TTL
    # must not take over: the Lease keeps changing.
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("live", T0, rv="5")
    clock = FakeClock(T0 + 300)
    clock.controllers.append(LiveHolder(cluster))
    with pytest.raises(LockHeldError, match="seen renewing"):
        lock(cluster, clock=clock, wait=200).acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "live"
    assert sum(clock.sleeps) >= 200


def test_lock_of_a_dead_holder_is_taken_over_after_observed_expiry():
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("crashed", T0 + 3600)  # renewTime even in our future: clocks do not matter
    clock = FakeClock()
    node_lock = lock(cluster, clock=clock, wait=90)
    node_lock.acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == node_lock.identity
    assert 60 <= sum(clock.sleeps) <= 62  # one full lease duration, watched from here
    assert "'crashed'" in node_lock.took_over
    assert cluster.leases[KEY]["spec"]["leaseTransitions"] == 1


def test_waiting_shorter_than_the_duration_never_takes_over():
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("crashed", T0 - 3600)
    clock = FakeClock()
    with pytest.raises(LockHeldError, match="not seen changing while watched for 30s"):
        lock(cluster, clock=clock, wait=30).acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "crashed"


def test_check_free_never_waits_or_writes():
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("you", T0 - 3600)
    clock = FakeClock()
    with pytest.raises(LockHeldError):
        lock(cluster, clock=clock, wait=600).check_free()
    assert clock.sleeps == [] and cluster.leases[KEY]["metadata"]["resourceVersion"] == "5"


def test_two_runs_racing_for_a_free_lock_one_wins():
    cluster = FakeCluster([])
    first, second = lock(cluster, job="user@ctl"), lock(cluster, job="user@ctl")
    real_create = cluster.create_lease

    def create_after_the_other(namespace, body):
        cluster.create_lease = real_create
        first.acquire()  # the other run creates between our read and our create
        return real_create(namespace, body)

    cluster.create_lease = create_after_the_other
    with pytest.raises(LockHeldError):
        second.acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == first.identity


def test_renew_writes_at_most_every_third_of_the_ttl_unless_confirmed():
    cluster = FakeCluster([])
    clock = FakeClock()
    node_lock = lock(cluster, clock=clock)
    node_lock.acquire()
    node_lock.renew()
    assert cluster.leases[KEY]["metadata"]["resourceVersion"] == "1"
    clock.t += 21
    node_lock.renew()
    assert cluster.leases[KEY]["metadata"]["resourceVersion"] == "2"
    node_lock.confirm()
    assert cluster.leases[KEY]["metadata"]["resourceVersion"] == "3"


def test_confirm_detects_a_lost_lock_and_release_leaves_it_alone():
    cluster = FakeCluster([])
    clock = FakeClock()
    node_lock = lock(cluster, clock=clock)
    node_lock.acquire()
    cluster.leases[KEY] = held_by("thief", clock.now(), rv="9")
    with pytest.raises(LockLostError, match=r"lost the lock.*'thief'"):
        node_lock.confirm()
    node_lock.release()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "thief"


def test_release_of_a_lock_taken_over_is_a_note_not_an_error():
    cluster = FakeCluster([])
    node_lock = lock(cluster)
    node_lock.acquire()
    cluster.leases[KEY] = held_by("next", T0, rv="7")  # taken over since our last renew
    node_lock.release()  # the real API answers 409 to the delete precondition: no exception
    assert "no longer this run's" in node_lock.release_note
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "next"


def test_release_failure_never_raises():
    cluster = FakeCluster([])
    node_lock = lock(cluster)
    node_lock.acquire()
    cluster.fail_on["delete_lease"] = ClusterError("delete lease ns/x: API answered 503")
    node_lock.release()
    assert "503" in node_lock.release_note
    cluster.fail_on["delete_lease"] = ConflictError("conflict")
    node_lock.acquire()
    node_lock.release()
    assert "no longer" in node_lock.release_note


# -- two runs of node-outage on one cluster -----------------------------------------------------------


def outage(cluster, clock, power, **overrides):
    return OutageRun(cluster, power, options(**overrides), clock)


def taint_events(cluster):
    return [body for _namespace, body in cluster.events if body["reason"] == "FailoverTainted"]


def test_run_that_got_the_lock_late_decides_again_and_does_not_taint_twice():
    # Two runs started at once, same job id: both read the node (no taint yet), then the other one takes the
    # lock and completes the outage before this one creates its Lease.
    cluster, clock, power = setup()
    late = outage(cluster, clock, power)
    real_create = cluster.create_lease

    def other_run_first(namespace, body):
        cluster.create_lease = real_create
        outage(cluster, clock, power).run()
        return real_create(namespace, body)

    cluster.create_lease = other_run_first
    result = late.run()
    assert len(taint_events(cluster)) == 1
    assert not result["changed"] and result["action"] == records.COMPLETE
    assert cluster.leases == {}


def test_second_run_meets_a_live_run_and_is_refused_naming_it():
    # The lab case and kill -9: a run is under way (e.g. a module orphaned by a killed ansible-playbook);
    # a second one under the same job id starts while the first waits for volumes to detach.
    cluster, clock, power = setup()
    first = outage(cluster, clock, power)
    second = {}

    def start_second(now):
        if has_out_of_service_taint(cluster.nodes["w3"]) and not second:
            before = (len(cluster.events), sum(1 for c in cluster.calls if c[0] in ("patch_node", "force_delete_pod")))
            with pytest.raises(LockHeldError) as refused:
                outage(cluster, clock, power).run()
            after = (len(cluster.events), sum(1 for c in cluster.calls if c[0] in ("patch_node", "force_delete_pod")))
            second.update(message=str(refused.value), unchanged=before == after)

    clock.controllers.insert(0, start_second)
    result = first.run()
    assert result["changed"]
    assert second["unchanged"]
    assert f"pid {first.lock.holder['pid']}, run {first.lock.holder['run']}" in second["message"]
    assert len(taint_events(cluster)) == 1


def test_run_that_lost_the_lock_stops_before_its_next_write():
    # Another run takes the lock over while this one waits for volumes to detach; at the same moment the
    # volumes detach, so the step is about to end with a record write: that write must not happen.
    cluster, clock, power = setup()
    clock.controllers.clear()
    run = outage(cluster, clock, power, detach_timeout=300)
    stolen = {}

    def take_over_and_detach(now):
        if has_out_of_service_taint(cluster.nodes["w3"]) and not stolen and now - T0 > 5:
            cluster.leases[("nodeguard-system", "nodeguard-failover-w3")] = {
                "metadata": {"name": "nodeguard-failover-w3", "resourceVersion": "99"},
                "spec": {"holderIdentity": "other run", "leaseDurationSeconds": 120, "renewTime": format_micro_time(now)},
            }
            cluster.attachments = [a for a in cluster.attachments if a["spec"]["nodeName"] != "w3"]
            stolen["writes"] = len([c for c in cluster.calls if c[0] == "patch_node"])

    clock.controllers.append(take_over_and_detach)
    with pytest.raises(LockLostError, match="other run"):
        run.run()
    assert stolen and len([c for c in cluster.calls if c[0] == "patch_node"]) == stolen["writes"]
    assert not records.step_done(records.read(cluster.nodes["w3"]), "detach-volumes")
    assert cluster.leases[("nodeguard-system", "nodeguard-failover-w3")]["spec"]["holderIdentity"] == "other run"


def test_failed_release_does_not_hide_the_runs_own_error():
    cluster, clock, power = setup()
    clock.controllers.clear()
    delete_lease = cluster.delete_lease

    def node_lock_release_fails(namespace, name, resource_version):  # the node's lock, not the cluster lock
        if name == "nodeguard-failover-w3":
            raise ConflictError("delete lease: conflict, the object changed meanwhile")
        return delete_lease(namespace, name, resource_version)

    cluster.delete_lease = node_lock_release_fails
    run = outage(cluster, clock, power, detach_timeout=10)
    with pytest.raises(StepTimeoutError, match="VolumeAttachments still name w3"):
        run.run()
    assert "no longer this run's" in run.lock.release_note


def test_recover_refused_while_a_live_run_holds_the_lock():
    cluster, clock, power = setup()
    outage(cluster, clock, power).run()
    w3 = cluster.nodes["w3"]  # back: Ready for two minutes, fresh Lease, power on
    w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    cluster.node_leases["w3"] = lease("w3", clock.now() - 3)
    holder = NodeLock(cluster, "nodeguard-system", "w3", "job-1", 120, clock)
    holder.acquire()
    before = cluster.snapshot()
    with pytest.raises(LockHeldError, match="job 'job-1'"):
        RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-1"), clock).run()
    assert cluster.snapshot() == before


def test_recover_after_a_crashed_outage_says_so_and_is_not_worth_retrying():
    # node-recover retried an outage-running refusal for 5 minutes although nothing ran.
    cluster, clock, power = setup()
    cluster.fail_on["force_delete_pod"] = ConnectionError("job killed")
    with pytest.raises(ConnectionError):
        outage(cluster, clock, power).run()
    with pytest.raises(RefusedError, match=r"outage-stopped.*no run holds the node's lock") as stopped:
        RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2"), clock).run()
    assert not isinstance(stopped.value, NotRecoveredYetError)


def test_recover_of_a_node_not_back_yet_is_worth_retrying():
    cluster, clock, power = setup()
    outage(cluster, clock, power).run()
    with pytest.raises(NotRecoveredYetError, match="not recovered yet"):
        RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2"), clock).run()
    assert cluster.leases == {}


def test_run_that_lost_the_lock_does_not_fence():
    cluster, clock, _power = setup()

    class StealingPower(FakePower):
        """Reads On; meanwhile another run takes the lock over (this one was paused longer than the TTL)."""

        def status(self):
            key = ("nodeguard-system", "nodeguard-failover-w3")
            if key in cluster.leases and cluster.leases[key]["spec"]["holderIdentity"] != "other run":
                cluster.leases[key] = {
                    "metadata": {"name": key[1], "resourceVersion": "99"},
                    "spec": {"holderIdentity": "other run", "leaseDurationSeconds": 120, "renewTime": format_micro_time(clock.now())},
                }
            return super().status()

    power = StealingPower("on")
    before = cluster.snapshot()
    with pytest.raises(LockLostError):
        outage(cluster, clock, power, fence=True).run()
    assert power.actions == []
    assert cluster.snapshot()[:3] == before[:3]  # nodes, pods, attachments untouched
