"""The full Node list is read for decisions, not for power readings (issue 23, item 5).

It is the costly read of an incident (about 11 MB at 1000 nodes). The identity rule (a systemUUID proves a machine
only when no other Node reports it) used to read it at every power reading, so a run read it once per check of its
waits. Now a run reads it once per decision (the safety rules, fresh each time) and the identity rule reuses the
last one: a node-outage run reads it three times (the first decision, again under the node's lock, right before
the taint), a node-recover run once, however many power readings they take.
"""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from incident_fakes import T0, lease, node, renewing_lease, system_uuid
from incident_scenario import options, setup


def counting(cluster, power):
    """Count full Node list reads and power readings with identity."""
    counts = {"list_nodes": 0, "identify": 0}
    list_nodes, identify = cluster.list_nodes, power.identify

    def counted_list():
        counts["list_nodes"] += 1
        return list_nodes()

    def counted_identify():
        counts["identify"] += 1
        return identify()

    cluster.list_nodes, power.identify = counted_list, counted_identify
    return counts


def test_an_outage_run_reads_the_node_list_once_per_decision_not_per_power_reading():
    cluster, clock, power = setup()
    # The Lease watch keeps the proofs waiting some checks: each check reads power with identity.
    counts = counting(cluster, power)
    result = OutageRun(cluster, power, options(), clock).run()
    assert result["tainted"] and result["record"]["power"]["identity"]["verified"] is True
    assert counts["identify"] >= 6  # the proof watch's readings, the taint's and the steps' re-reads
    assert counts["list_nodes"] == 3  # decide, decide again under the lock, the fresh read right before the taint


def test_a_recover_run_reads_the_node_list_once():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    w3 = cluster.nodes["w3"]
    w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    w3["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    renewing_lease(cluster, clock, "w3")
    power.state = "on"
    counts = counting(cluster, power)
    result = RecoverRun(cluster, power, RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock).run()
    assert result["changed"] and not has_out_of_service_taint(cluster.nodes["w3"])
    assert counts["identify"] == 1 and counts["list_nodes"] == 1  # the identity and the same-machine check share it


def test_a_clone_that_joins_during_the_proofs_is_seen_right_before_the_taint():
    """The identity rule reuses the last decision's list; the one right before the taint is read fresh, and the
    power reading at the taint is checked against it: a Node that joined with w3's systemUUID meanwhile stops it."""
    cluster, clock, power = setup()

    def clone_joins(now):
        if now > T0 + 2 and "w9" not in cluster.nodes:
            clone = node("w9")
            clone["status"]["nodeInfo"]["systemUUID"] = system_uuid("w3")
            cluster.nodes["w9"] = clone
            cluster.node_leases["w9"] = lease("w9", now)

    clock.controllers.append(clone_joins)
    with pytest.raises(ProofError, match=r"Nodes w3, w9 all report that systemUUID"):
        OutageRun(cluster, power, options(), clock).run()
    assert not has_out_of_service_taint(cluster.nodes["w3"])
    assert [c for c in cluster.calls if c[0] == "force_delete_pod"] == []
