"""Issue 20 items 10 and 11: power read again at the point of action; errors after the taint.

A randomized fault campaign found the machine powered back on between the second Off reading and the taint: the
force-deletes and the force-detach followed 20-160 ms after power-on and the run ended "outage complete". Now the
power source is read once more, identity shown, right before the taint and before each batch of force-deletes and
VolumeAttachment deletes; "came back" (power On, a new bootID, a renewed Lease) is checked in every step; a run
never reports "outage complete" while the node is back."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import NodeReturnedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import CLUSTER_LOCK_NAME
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from incident_fakes import T0
from incident_scenario import options, setup

DESTRUCTIVE = ("force_delete_pod", "delete_volume_attachment")


def test_a_power_on_just_after_the_second_off_reading_stops_the_run_before_the_taint():
    cluster, clock, power = setup()
    create_lease = cluster.create_lease

    def power_on_once_proven(namespace, body):
        if body["metadata"]["name"] == CLUSTER_LOCK_NAME:  # the proofs hold (the last Off reading is taken): power on
            power.state = "on"
        return create_lease(namespace, body)

    cluster.create_lease = power_on_once_proven
    before = cluster.snapshot()
    with pytest.raises(NodeReturnedError, match=r"power reads ON right before the taint.*nothing was changed"):
        OutageRun(cluster, power, options(), clock).run()
    assert cluster.snapshot()[:3] == before[:3]  # nodes, pods, attachments as they were
    assert not has_out_of_service_taint(cluster.nodes["w3"])
    assert not [c for c in cluster.calls if c[0] in ("patch_node", *DESTRUCTIVE)]


def test_a_power_on_right_after_the_taint_stops_before_the_force_deletes():
    cluster, clock, power = setup()
    patch_node = cluster.patch_node

    def taint_then_power_on(name, patch):
        node = patch_node(name, patch)
        if has_out_of_service_taint(node):
            power.state = "on"
        return node

    cluster.patch_node = taint_then_power_on
    with pytest.raises(NodeReturnedError, match="came back during step delete-pods"):
        OutageRun(cluster, power, options(), clock).run()
    rec = records.read(cluster.nodes["w3"])
    assert rec["phase"] == records.INTERRUPTED and "reads power ON" in rec["interrupted"]["reason"]
    assert not [c for c in cluster.calls if c[0] in DESTRUCTIVE]


def test_a_power_on_before_the_volume_attachment_deletes_stops_them():
    cluster, clock, power = setup()
    clock.controllers = []  # nothing detaches: the run deletes the VolumeAttachments (opted in) after detach_timeout

    def power_on_while_waiting(now):
        if has_out_of_service_taint(cluster.nodes["w3"]) and ("force_delete_pod", "app/db-0") in cluster.calls and now >= T0 + 25:
            power.state = "on"

    clock.controllers.append(power_on_while_waiting)
    with pytest.raises(NodeReturnedError, match="came back during step detach-volumes"):
        OutageRun(cluster, power, options(detach_timeout=30, delete_volume_attachments=True), clock).run()
    assert not [c for c in cluster.calls if c[0] == "delete_volume_attachment"]
    assert "right before deleting VolumeAttachments" in records.read(cluster.nodes["w3"])["interrupted"]["reason"]


def test_a_power_on_during_verify_replacements_is_no_outage_complete():
    cluster, clock, power = setup()
    clock.controllers.append(
        lambda now: (
            setattr(power, "state", "on")
            if not [a for a in cluster.attachments if a["spec"]["nodeName"] == "w3"] and has_out_of_service_taint(cluster.nodes["w3"])
            else None
        )
    )
    with pytest.raises(NodeReturnedError):
        OutageRun(cluster, power, options(), clock).run()
    rec = records.read(cluster.nodes["w3"])
    assert rec["phase"] == records.INTERRUPTED and rec["phase"] != records.OUTAGE_COMPLETE


def test_a_new_boot_id_during_verify_replacements_is_a_return():
    cluster, clock, power = setup()

    def reboots(now):
        if has_out_of_service_taint(cluster.nodes["w3"]) and not [a for a in cluster.attachments if a["spec"]["nodeName"] == "w3"]:
            cluster.nodes["w3"]["status"]["nodeInfo"]["bootID"] = "boot-w3-2"

    clock.controllers.append(reboots)
    with pytest.raises(NodeReturnedError, match="booted again"):
        OutageRun(cluster, power, options(), clock).run()
    rec = records.read(cluster.nodes["w3"])
    assert rec["phase"] == records.INTERRUPTED and "bootID boot-w3-1 -> boot-w3-2" in rec["interrupted"]["reason"]
