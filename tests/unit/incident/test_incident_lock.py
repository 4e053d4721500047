"""The per-node lock Lease."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import LockHeldError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import NodeLock, holder_state
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time
from incident_fakes import T0, FakeClock, FakeCluster

KEY = ("ns", "nodeguard-failover-w3")


def held_by(holder, renewed, ttl=60):
    return {
        "metadata": {"name": KEY[1], "resourceVersion": "5"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": ttl, "renewTime": format_micro_time(renewed)},
    }


def lock(cluster, job="me", clock=None):
    return NodeLock(cluster, "ns", "w3", job, 60, clock or FakeClock())


def test_holder_states():
    assert holder_state(None, "me", T0)[0] == "free"
    assert holder_state(held_by("me", T0 - 10), "me", T0)[0] == "ours"
    assert holder_state(held_by("you", T0 - 10), "me", T0)[:2] == ("held", "you")
    assert holder_state(held_by("you", T0 - 61), "me", T0)[0] == "expired"


def test_acquire_creates_and_release_deletes():
    cluster = FakeCluster([])
    node_lock = lock(cluster)
    node_lock.acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "me"
    assert cluster.leases[KEY]["spec"]["leaseDurationSeconds"] == 60
    node_lock.release()
    assert KEY not in cluster.leases


def test_held_lock_refuses():
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("you", T0 - 10)
    with pytest.raises(LockHeldError, match="'you'"):
        lock(cluster).acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "you"


def test_expired_lock_is_taken_over():
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("crashed", T0 - 120)
    lock(cluster).acquire()
    assert cluster.leases[KEY]["spec"]["holderIdentity"] == "me"


def test_same_job_takes_its_lock_back_at_once():
    cluster = FakeCluster([])
    cluster.leases[KEY] = held_by("me", T0 - 1)
    lock(cluster).acquire()
    assert cluster.leases[KEY]["metadata"]["resourceVersion"] == "6"


def test_renew_writes_at_most_every_third_of_the_ttl():
    cluster = FakeCluster([])
    clock = FakeClock()
    node_lock = lock(cluster, clock=clock)
    node_lock.acquire()
    node_lock.renew()
    assert cluster.leases[KEY]["metadata"]["resourceVersion"] == "1"
    clock.t += 21
    node_lock.renew()
    assert cluster.leases[KEY]["metadata"]["resourceVersion"] == "2"


def test_renew_detects_a_stolen_lock():
    cluster = FakeCluster([])
    clock = FakeClock()
    node_lock = lock(cluster, clock=clock)
    node_lock.acquire()
    cluster.leases[KEY] = held_by("thief", clock.now())
    with pytest.raises(LockHeldError, match="lost the lock"):
        node_lock.renew(force=True)
