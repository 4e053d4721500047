"""Checks at the point of action: storm, quorum and return re-read right before the taint; a resumed run and
every destructive step prove again; writes after the taint are conditional; Events are best effort."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError, ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import NodeReturnedError, RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import CLUSTER_LOCK_NAME
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time, parse_time
from incident_fakes import T0, FakeClock, FakeCluster, FakePower, lease, node, pod
from incident_scenario import options, setup


def run(cluster, clock, power, **overrides):
    return OutageRun(cluster, power, options(**overrides), clock).run()


def refused_without_change(cluster, clock, power, error, match, **overrides):
    before = cluster.snapshot()
    with pytest.raises(error, match=match):
        run(cluster, clock, power, **overrides)
    assert cluster.snapshot() == before
    assert not has_out_of_service_taint(cluster.nodes["w3"])


def refused_and_nothing_written(cluster, clock, power, error, match, **overrides):
    """As refused_without_change, for tests where other nodes change meanwhile."""
    with pytest.raises(error, match=match):
        run(cluster, clock, power, **overrides)
    assert not [c for c in cluster.calls if c[0] in ("patch_node", "force_delete_pod", "delete_volume_attachment")]
    assert cluster.events == [] and cluster.leases == {} and cluster.config_maps == {}
    assert not has_out_of_service_taint(cluster.nodes["w3"])


def go_not_ready(cluster, names, at):
    def tick(now):
        if now >= at:
            for name in names:
                cluster.nodes[name]["status"]["conditions"][0].update(status="Unknown", lastTransitionTime=format_time(at))

    return tick


# -- defect 4: storm and quorum from the fresh read the taint is written against -----------------


def test_nodes_failing_while_the_proofs_wait_count_for_the_storm():
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node("w3", ready="Unknown", since=clock.now() - 5)
    clock.controllers.append(go_not_ready(cluster, ["w1", "w2"], T0 + 8))  # 3 of 4 NotReady before the taint
    refused_and_nothing_written(cluster, clock, power, RefusedError, r"storm.*3 of 4 nodes are NotReady", not_ready_seconds=20, proof_timeout=60)


def test_control_plane_quorum_lost_while_the_proofs_wait_is_refused():
    cps = [node(f"cp{i}", labels={"node-role.kubernetes.io/control-plane": ""}) for i in (1, 2)]
    workers = [node(f"w{i}") for i in (1, 2, 4, 5)]
    cluster = FakeCluster(cps + workers + [node("w3", ready="Unknown", since=T0 - 5, labels={"node-role.kubernetes.io/control-plane": ""})])
    cluster.node_leases["w3"] = lease("w3", T0 - 600)
    clock = FakeClock()
    clock.controllers.append(go_not_ready(cluster, ["cp2"], T0 + 8))
    refused_and_nothing_written(
        cluster, clock, FakePower("off"), RefusedError, "etcd-quorum", not_ready_seconds=20, proof_timeout=60, allow_control_plane=True
    )


def test_taint_is_written_against_the_resource_version_of_the_fresh_list():
    cluster, clock, power = setup()
    seen = {}
    real_list, real_patch = cluster.list_nodes, cluster.patch_node

    def list_nodes():
        nodes = real_list()
        seen["rv"] = next(n for n in nodes if n["metadata"]["name"] == "w3")["metadata"]["resourceVersion"]
        return nodes

    def patch_node(name, patch):
        if "spec" in patch and "taint_rv" not in seen:
            seen["taint_rv"] = patch["metadata"]["resourceVersion"]
            seen["listed_rv"] = seen["rv"]
        return real_patch(name, patch)

    cluster.list_nodes, cluster.patch_node = list_nodes, patch_node
    run(cluster, clock, power)
    assert seen["taint_rv"] == seen["listed_rv"]


# -- defect 13: etcd members are control plane --------------------------------------------------


def test_rke2_etcd_only_node_is_control_plane():
    cluster, clock, power = setup()
    cluster.nodes["w3"]["metadata"]["labels"]["node-role.kubernetes.io/etcd"] = "true"
    refused_without_change(cluster, clock, power, RefusedError, r"control-plane\]: w3 is a control-plane or etcd node")


def test_node_with_an_etcd_static_pod_is_control_plane_whatever_its_labels():
    cluster, clock, power = setup()
    etcd = pod("etcd-w3", "w3", namespace="kube-system", annotations={"kubernetes.io/config.mirror": "x"})
    etcd["metadata"]["labels"] = {"component": "etcd", "tier": "control-plane"}
    cluster.pods.append(etcd)
    refused_without_change(cluster, clock, power, RefusedError, r"control-plane\]")


# -- defect 11: no power source, after the safety rules -----------------------------------------


def test_worker_without_power_source_is_refused_clearly():
    cluster, clock, _power = setup()
    refused_without_change(cluster, clock, None, RefusedError, r"no-power-source\]: No power source for w3")


def test_control_plane_node_without_power_source_is_refused_as_control_plane_first():
    cluster, clock, _power = setup()
    cluster.nodes["w3"]["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    refused_without_change(cluster, clock, None, RefusedError, r"^refused \[control-plane\]")


# -- defect 9: a renewed Lease counts as back ---------------------------------------------------


def test_lease_renewed_while_the_proofs_wait_stops_at_once():
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node("w3", ready="Unknown", since=clock.now() - 5)
    cluster.node_leases["w3"] = lease("w3", clock.now() - 5)  # not stale yet

    def kubelet_alive(now):
        if now >= T0 + 4:
            cluster.node_leases["w3"] = lease("w3", now)  # NotReady (CNI starting) but renewing

    clock.controllers.append(kubelet_alive)
    refused_without_change(cluster, clock, power, ProofError, "renewed its Lease", not_ready_seconds=20, proof_timeout=120)
    assert sum(clock.sleeps) < 30


def test_lease_renewed_after_the_proofs_prevents_the_taint():
    cluster, clock, power = setup()
    create_lease = cluster.create_lease

    def renew_once_proven(namespace, body):
        if body["metadata"]["name"] == CLUSTER_LOCK_NAME:  # the proofs hold, the taint's read is next: renewed now
            cluster.node_leases["w3"] = lease("w3", T0 - 100)
        return create_lease(namespace, body)

    cluster.create_lease = renew_once_proven
    refused_without_change(cluster, clock, power, NodeReturnedError, "renewed its Lease")


def test_lease_renewed_during_the_run_interrupts_it():
    cluster, clock, power = setup()

    def kubelet_back(now):
        if has_out_of_service_taint(cluster.nodes["w3"]):
            cluster.node_leases["w3"] = lease("w3", now)

    clock.controllers.insert(0, kubelet_back)
    with pytest.raises(NodeReturnedError, match="renewed its Lease"):
        run(cluster, clock, power)
    rec = records.read(cluster.nodes["w3"])
    assert rec["phase"] == records.INTERRUPTED and "Lease" in rec["interrupted"]["reason"]
    assert has_out_of_service_taint(cluster.nodes["w3"])


# -- defect 5: a resumed run proves again ------------------------------------------------------


def crashed_after_taint():
    cluster, clock, power = setup()
    cluster.fail_on["force_delete_pod"] = ConnectionError("job killed")
    with pytest.raises(ConnectionError):
        run(cluster, clock, power)
    assert records.read(cluster.nodes["w3"])["phase"] == "delete-pods"
    cluster.leases.clear()  # the crashed run's lock expired and is gone
    return cluster, clock, power


def force_deletes(cluster):
    return [c for c in cluster.calls if c[0] == "force_delete_pod"]


def test_resume_with_power_back_on_stops_and_records_why():
    cluster, clock, power = crashed_after_taint()
    power.state = "on"
    deleted = len(force_deletes(cluster))
    with pytest.raises(NodeReturnedError, match="power reads ON on resume"):
        run(cluster, clock, power)
    assert len(force_deletes(cluster)) == deleted
    rec = records.read(cluster.nodes["w3"])
    assert rec["phase"] == records.INTERRUPTED and rec["interrupted"]["step"] == "delete-pods"
    assert cluster.events[-1][1]["type"] == "Warning"
    assert has_out_of_service_taint(cluster.nodes["w3"])


def test_resume_with_unreadable_power_changes_nothing():
    cluster, clock, _power = crashed_after_taint()
    before = cluster.snapshot()
    with pytest.raises(ProofError, match="power-off on resume"):
        run(cluster, clock, FakePower(error="BMC unreachable"))
    assert cluster.snapshot() == before


def test_resume_on_a_recreated_node_object_is_refused():
    cluster, clock, power = crashed_after_taint()
    cluster.nodes["w3"]["metadata"]["uid"] = "uid-w3-new"
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match="node-replaced"):
        run(cluster, clock, power)
    assert cluster.snapshot() == before


def test_volume_attachments_are_deleted_only_on_a_fresh_power_proof():
    cluster, clock, power = setup()
    clock.controllers.clear()  # the CSI driver never detaches
    clock.controllers.append(lambda now: setattr(power, "state", "on") if now > T0 + 100 else None)
    with pytest.raises(NodeReturnedError, match="power reads ON before deleting VolumeAttachments"):
        run(cluster, clock, power, delete_volume_attachments=True, detach_timeout=120, proof_max_age_seconds=60)
    assert not [c for c in cluster.calls if c[0] == "delete_volume_attachment"]
    assert records.read(cluster.nodes["w3"])["phase"] == records.INTERRUPTED


# -- defect 10: results that tell the truth ---------------------------------------------------


def test_event_failure_after_the_taint_still_reports_the_change():
    cluster, clock, power = setup()
    cluster.fail_on["create_event"] = ClusterError("create event: API answered 403 Forbidden")
    outage = OutageRun(cluster, power, options(), clock)
    result = outage.run()
    assert result["changed"] and outage.changed and result["tainted"]
    assert "Event FailoverPowerOffProven not written" in result["message"]
    assert result["write_errors"]


def test_deployment_replacement_created_before_the_taint_counts():
    cluster, clock, power = setup()
    # the taint-based eviction replaced the Deployment pod 5 minutes before the run tainted the node
    cluster.pods.append(pod("web-123-early", "w2", owner=("ReplicaSet", "web-123"), created=T0 - 300))
    clock.controllers.clear()

    def statefulset_controller(now):
        if has_out_of_service_taint(cluster.nodes["w3"]):
            cluster.attachments = [a for a in cluster.attachments if a["spec"]["nodeName"] != "w3"]
            if not cluster.get_pod("app", "db-0"):
                cluster.pods.append(pod("db-0", "w1", owner=("StatefulSet", "db"), created=now))

    clock.controllers.append(statefulset_controller)
    result = run(cluster, clock, power, replacement_timeout=600)
    rec = result["record"]
    replaced = {r["pod"]: r["replacement"] for r in rec["replacements"]["replaced"]}
    assert replaced["app/web-123-abc"] == "app/web-123-early"
    step = rec["steps"]["verify-replacements"]
    assert parse_time(step["end"]) - parse_time(step["start"]) < 10  # green at once, not after the timeout


# -- defect 12: conditional writes after the taint --------------------------------------------


def test_record_changed_by_someone_else_is_not_overwritten():
    cluster, clock, power = setup()

    def other_writer(now):
        w3 = cluster.nodes["w3"]
        rec = records.read(w3)
        if rec and rec["phase"] == "detach-volumes" and rec.get("job") != "job-other":
            rec["job"] = "job-other"
            w3["metadata"]["annotations"][records.ANNOTATION] = records.annotations_patch(rec)["metadata"]["annotations"][records.ANNOTATION]
            w3["metadata"]["resourceVersion"] = str(int(w3["metadata"]["resourceVersion"]) + 1)

    clock.controllers.insert(0, other_writer)
    with pytest.raises(RefusedError, match=r"record-changed.*job-other"):
        run(cluster, clock, power)
    assert records.read(cluster.nodes["w3"])["job"] == "job-other"


def test_status_updates_between_record_writes_are_retried():
    cluster, clock, power = setup()

    def heartbeat(now):
        w3 = cluster.nodes["w3"]
        w3["metadata"]["resourceVersion"] = str(int(w3["metadata"]["resourceVersion"]) + 1)

    clock.controllers.insert(0, heartbeat)
    result = run(cluster, clock, power)
    assert result["record"]["phase"] == records.OUTAGE_COMPLETE


def test_record_writes_after_the_taint_carry_a_resource_version():
    cluster, clock, power = setup()
    patches = []
    real = cluster.patch_node
    cluster.patch_node = lambda name, patch: patches.append(patch) or real(name, patch)
    run(cluster, clock, power)
    assert len(patches) > 3
    assert all(p["metadata"].get("resourceVersion") for p in patches)


def test_unreadable_bmc_is_never_recorded_as_already_off():
    cluster, clock, _power = setup()
    outage = OutageRun(cluster, FakePower(error="BMC unreachable"), options(fence=True), clock)
    with pytest.raises(ProofError, match="power-off"):
        outage.run()
    assert "already reads OFF" not in outage.facts["fence"]
    assert outage.facts["power"]["state"] == "unreadable"


def test_a_node_seen_notready_then_ready_became_ready_and_leads_the_refusal():
    """Issue 34 item 5: "became Ready" only for a node this run saw NotReady, and said first."""
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node("w3", ready="Unknown", since=clock.now() - 5)

    def kubelet_back(now):
        if now >= T0 + 4:
            cluster.nodes["w3"] = node("w3", ready="True", since=now)

    clock.controllers.append(kubelet_back)
    with pytest.raises(ProofError) as refused:
        run(cluster, clock, power, not_ready_seconds=20, proof_timeout=120)
    assert str(refused.value).startswith("w3 became Ready; not waiting for it to go down again: power-off not proven, nothing was changed.")


def test_a_node_ready_from_the_start_is_up_not_back():
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node("w3", ready="True", since=clock.now() - 600)
    with pytest.raises(ProofError) as refused:
        run(cluster, clock, power, proof_timeout=0)
    message = str(refused.value)
    assert not has_out_of_service_taint(cluster.nodes["w3"])
    assert message.startswith("w3 is Ready (this run never saw it NotReady): not waiting for it to go down: power-off not proven")
    assert "became Ready" not in message and "again" not in message
