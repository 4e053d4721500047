"""Issue 20 item 4: the cluster-wide rules (storm, quorum, one control-plane node at a time) are decided under one
cluster lock (the Lease nodeguard-system/nodeguard-cluster), held from the read they are decided on to the taint."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import LockLostError, RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import CLUSTER_LOCK_NAME, ClusterLock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time
from incident_fakes import T0, FakeClock, FakeCluster, FakePower, lease, node
from incident_scenario import options

CP = {"node-role.kubernetes.io/control-plane": ""}


class CountingPower(FakePower):
    def __init__(self, machine):
        super().__init__("off", machine=machine)
        self.readings = 0

    def status(self):
        self.readings += 1
        return super().status()


def five_control_plane_nodes_two_dead():
    cluster = FakeCluster([node(f"cp{i}", labels=dict(CP)) for i in range(1, 6)])
    for name in ("cp1", "cp2"):
        cluster.nodes[name]["status"]["conditions"][0]["status"] = "Unknown"
    for name in cluster.nodes:
        cluster.node_leases[name] = lease(name, T0 - 600 if name in ("cp1", "cp2") else T0 - 5)
    return cluster


def cp_options(name, job):
    return options(node=name, job_id=job, allow_control_plane=True, max_unhealthy="60%")


def test_two_runs_on_two_control_plane_nodes_never_both_taint():
    # Run B (cp2) runs from start to end inside run A's (cp1) window between the read its rules are decided on and
    # its taint. On 08a3975 both tainted: A decided on a Node list in which cp2 had no taint yet.
    cluster = five_control_plane_nodes_two_dead()
    clock = FakeClock()
    power_a, power_b = CountingPower("cp1"), CountingPower("cp2")
    list_nodes = cluster.list_nodes
    outcome = {}

    def list_nodes_then_run_b():
        nodes = list_nodes()
        if power_a.readings >= 2 and "b" not in outcome:  # A has proven power Off: this is the read it taints on
            outcome["b"] = "started"
            try:
                OutageRun(cluster, power_b, cp_options("cp2", "job-b"), clock).run()
                outcome["b"] = "complete"
            except Exception as e:  # noqa: BLE001 - recorded for the assertion
                outcome["b"] = f"{type(e).__name__}: {e}"
        return nodes

    cluster.list_nodes = list_nodes_then_run_b
    try:
        OutageRun(cluster, power_a, cp_options("cp1", "job-a"), clock).run()
        outcome["a"] = "complete"
    except (RefusedError, LockLostError) as e:
        outcome["a"] = f"{type(e).__name__}: {e}"
    tainted = sorted(name for name, n in cluster.nodes.items() if has_out_of_service_taint(n))
    assert len(tainted) == 1, f"both control-plane nodes tainted: {outcome}"
    assert ("nodeguard-system", CLUSTER_LOCK_NAME) not in cluster.leases  # released


def test_a_run_refuses_a_second_control_plane_node_once_the_first_is_tainted():
    cluster = five_control_plane_nodes_two_dead()
    clock = FakeClock()
    OutageRun(cluster, FakePower("off", machine="cp1"), cp_options("cp1", "job-a"), clock).run()
    with pytest.raises(RefusedError, match=r"\[control-plane\].*cp1 already carry the out-of-service taint"):
        OutageRun(cluster, FakePower("off", machine="cp2"), cp_options("cp2", "job-b"), clock).run()
    assert not has_out_of_service_taint(cluster.nodes["cp2"])


def test_the_cluster_lock_is_held_from_the_decision_to_the_taint_only():
    cluster = five_control_plane_nodes_two_dead()
    clock = FakeClock()
    held = []
    patch_node = cluster.patch_node

    def patch_and_look(name, patch):
        held.append(cluster.get_lease("nodeguard-system", CLUSTER_LOCK_NAME) is not None)
        return patch_node(name, patch)

    cluster.patch_node = patch_and_look
    OutageRun(cluster, FakePower("off", machine="cp1"), cp_options("cp1", "job-a"), clock).run()
    assert held[0] is True  # the taint write
    assert not any(held[1:])  # the record writes after it: released
    assert ("nodeguard-system", CLUSTER_LOCK_NAME) not in cluster.leases


def test_a_held_cluster_lock_makes_a_run_wait_and_refuse_naming_the_holder():
    cluster = five_control_plane_nodes_two_dead()
    clock = FakeClock()
    state = {"rv": 1}

    def live_holder(now):  # another run that keeps renewing the cluster lock
        state["rv"] += 1
        cluster.leases[("nodeguard-system", CLUSTER_LOCK_NAME)] = {
            "metadata": {"name": CLUSTER_LOCK_NAME, "resourceVersion": str(state["rv"])},
            "spec": {"holderIdentity": "job-b (host pid 1 run x)", "leaseDurationSeconds": 120, "renewTime": format_micro_time(now)},
        }

    live_holder(T0)
    clock.controllers.append(live_holder)
    before = cluster.snapshot()[0]
    with pytest.raises(RefusedError, match=r"\[lock-held\]: .*cluster-wide rules.*job-b"):
        OutageRun(cluster, FakePower("off", machine="cp1"), cp_options("cp1", "job-a"), clock).run()
    assert cluster.snapshot()[0] == before  # no taint, no record


def test_the_cluster_lock_is_one_lease_for_every_node():
    clock = FakeClock()
    cluster = FakeCluster([])
    assert ClusterLock(cluster, "ns", "a", "j", 60, clock).name == ClusterLock(cluster, "ns", "b", "j", 60, clock).name == "nodeguard-cluster"


def test_a_node_tainted_by_another_run_counts_in_the_storm_rule_even_while_ready():
    # Two power-event runs on two Ready workers, max_unhealthy 1: the second sees the first's taint and refuses.
    from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time

    cluster = FakeCluster([node("cp1", labels=dict(CP)), node("w1"), node("w2"), node("w3")])
    for name in cluster.nodes:
        cluster.node_leases[name] = lease(name, T0 - 30)
    clock = FakeClock()
    event = format_time(T0 - 5)
    OutageRun(cluster, FakePower("off", machine="w3"), options(power_event_time=event, max_unhealthy="1", verify_replacements=False), clock).run()
    assert has_out_of_service_taint(cluster.nodes["w3"])
    with pytest.raises(RefusedError, match=r"\[storm\].*w2, w3"):
        OutageRun(
            cluster, FakePower("off", machine="w2"), options(node="w2", job_id="job-2", power_event_time=format_time(clock.now() - 5), max_unhealthy="1"), clock
        ).run()
    assert not has_out_of_service_taint(cluster.nodes["w2"])
