"""Recovery removes the taint only when the node is really back, and prints the timeline."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError, ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from incident_fakes import T0, FakePower, pod, renewing_lease
from incident_scenario import options, setup


def after_outage():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    return cluster, clock


def node_back(cluster, clock, ready_for=120):
    condition = cluster.nodes["w3"]["status"]["conditions"][0]
    condition["status"] = "True"
    condition["lastTransitionTime"] = format_time(clock.now() - ready_for)
    renewing_lease(cluster, clock, "w3")
    cluster.nodes["w3"]["status"]["nodeInfo"]["bootID"] = "boot-w3-2"  # restarted


def recover(cluster, clock, power, check_mode=False):
    return RecoverRun(cluster, power, RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock, check_mode).run()


def test_recover_removes_taint_and_closes_record():
    cluster, clock = after_outage()
    node_back(cluster, clock)
    result = recover(cluster, clock, FakePower("on"))
    w3 = cluster.nodes["w3"]
    assert not has_out_of_service_taint(w3)
    rec = records.read(w3)
    assert rec["phase"] == records.RECOVERED
    assert rec["steps"]["recover"]["outcome"] == "taint-removed"
    events = [e["event"] for e in result["timeline"]]
    assert events[0] == "node NotReady (first seen)"
    assert events[-2:] == ["node Ready again", "taint removed"]
    assert result["timeline"][0]["seconds"] == 0
    assert "out-of-service taint added" in result["timeline_table"]
    assert cluster.events[-1][1]["reason"] == "FailoverRecovered"
    assert cluster.leases == {}


@pytest.mark.parametrize(
    ("change", "missing"),
    [
        (lambda c, k: None, "power-on"),  # BMC still says Off
        (lambda c, k: c.nodes["w3"]["status"]["conditions"][0].update(status="False"), "ready"),
        (lambda c, k: k.controllers.clear(), "heartbeat"),  # its kubelet no longer renews the Lease
        (lambda c, k: c.pods.append(pod("zombie", "w3", created=T0 - 9999)), "old-pods-gone"),
    ],
)
def test_recover_keeps_taint_until_every_check_holds(change, missing):
    cluster, clock = after_outage()
    node_back(cluster, clock)
    change(cluster, clock)
    power = FakePower("off" if missing == "power-on" else "on")
    before = cluster.snapshot()
    with pytest.raises(ProofError, match=missing):
        recover(cluster, clock, power)
    assert cluster.snapshot() == before


def test_recover_check_mode_changes_nothing():
    cluster, clock = after_outage()
    node_back(cluster, clock)
    before = cluster.snapshot()
    result = recover(cluster, clock, FakePower("on"), check_mode=True)
    assert cluster.snapshot() == before
    assert not result["changed"] and all(c["ok"] for c in result["checks"])


def test_recover_without_taint_is_a_no_op():
    cluster, clock, _power = setup()
    result = recover(cluster, clock, FakePower("on"))
    assert not result["changed"]


def test_recover_refuses_while_an_outage_run_is_unfinished():
    cluster, clock, power = setup()
    clock.controllers.clear()  # volumes never detach: the outage stops in detach-volumes
    with pytest.raises(NodeguardError):
        OutageRun(cluster, power, options(detach_timeout=5), clock).run()
    node_back(cluster, clock)
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match=r"outage-stopped.*no run holds the node's lock"):
        recover(cluster, clock, FakePower("on"))
    assert cluster.snapshot() == before
