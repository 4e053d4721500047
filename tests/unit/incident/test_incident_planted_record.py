"""A record planted on the Node never reaches the history (issue 38, item 7).

The incident record is a Node annotation: the node's own kubelet, or anyone who may patch nodes, can write one.
node-recover believes a record only as the remediator-only history ConfigMap has it (recover.trusted_copy). Before
this fix node-outage copied whatever record stood on the Node into that history at its next taint, so a planted
record became a "matching copy": swapped back onto the Node later, it made node-recover remove the taint of a node
that never went down.
"""

import json

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from incident_fakes import FakePower, renewing_lease
from incident_scenario import options, setup

NS = "nodeguard-history"


def planted_record(cluster, clock) -> dict:
    """What a node patcher writes: a complete-looking incident whose taint-time bootID is one the node never had,
    so that the node, which never restarts, looks restarted to node-recover."""
    planted = records.new(cluster.nodes["w3"], "job-forged", clock.now() - 9000, None)
    planted["identity"]["boot_id"] = "boot-w3-0"
    for step in records.OUTAGE_STEPS:
        records.end_step(planted, step, clock.now() - 8000)
    planted["phase"] = records.OUTAGE_COMPLETE
    return planted


def plant(cluster, rec: dict) -> None:
    cluster.nodes["w3"]["metadata"]["annotations"][records.ANNOTATION] = json.dumps(rec)


def test_the_next_taint_does_not_archive_a_record_the_remediator_never_wrote():
    cluster, clock, power = setup()
    planted = planted_record(cluster, clock)
    plant(cluster, planted)
    OutageRun(cluster, power, options(), clock).run()
    assert planted["id"] not in [r["id"] for r in history.read(cluster, NS, "w3")]
    assert "previous" not in records.read(cluster.nodes["w3"])  # no link to a record the history does not hold


def test_a_planted_record_swapped_back_onto_the_node_does_not_remove_the_taint():
    # w3 never goes down (bootID boot-w3-1 throughout): a partition, and a power source that wrongly read Off.
    cluster, clock, power = setup()
    planted = planted_record(cluster, clock)
    plant(cluster, planted)
    OutageRun(cluster, power, options(), clock).run()
    # The partition ends: w3 reports in, Ready, renewing its Lease; its kubelet puts the planted record back.
    w3 = cluster.nodes["w3"]
    w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    renewing_lease(cluster, clock, "w3")
    plant(cluster, planted)
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match=r"record-untrusted.*has no copy in its history"):
        RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock).run()
    assert cluster.snapshot() == before
    assert has_out_of_service_taint(cluster.nodes["w3"])


def test_a_rerun_does_not_carry_a_rewritten_record_into_the_history():
    # The outage run stopped in detach-volumes; the node (it never went down: bootID boot-w3-1 throughout) rewrites
    # the recorded bootID. Before this fix the rerun resumed from the Node's record, saved it (as interrupted: "booted
    # again") and so replaced the history copy with it, and node-recover then removed the taint.
    cluster, clock, power = setup()
    outage_controllers = list(clock.controllers)
    clock.controllers.clear()  # volumes never detach: the run stops in detach-volumes
    with pytest.raises(NodeguardError):
        OutageRun(cluster, power, options(detach_timeout=5), clock).run()
    incident = records.read(cluster.nodes["w3"])["id"]
    rewritten = records.read(cluster.nodes["w3"])
    rewritten["identity"]["boot_id"] = "boot-w3-0"
    plant(cluster, rewritten)
    clock.controllers.extend(outage_controllers)
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match=r"record-untrusted.*differs from its history copy .* in identity.*Not resumed"):
        OutageRun(cluster, power, options(job_id="job-3"), clock).run()
    assert cluster.snapshot() == before
    kept = {r["id"]: r for r in history.read(cluster, NS, "w3")}
    assert kept[incident]["identity"]["boot_id"] == "boot-w3-1"
