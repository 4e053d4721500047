"""node-recover proves a restart of the same machine, with nothing left attached, under the lock."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import LockHeldError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import OUT_OF_SERVICE_TAINT, has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time, format_time
from incident_fakes import T0, FakeClock, FakePower, pod, renewing_lease, volume_attachment
from incident_scenario import dead_worker_cluster, options, setup


def after_outage():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    return cluster, clock


def back(cluster, clock, boot_id="boot-w3-2"):
    w3 = cluster.nodes["w3"]
    w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    w3["status"]["nodeInfo"]["bootID"] = boot_id
    renewing_lease(cluster, clock, "w3")


def recover(cluster, clock, check_mode=False, power=None):
    run = RecoverRun(cluster, power or FakePower("on"), RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock, check_mode)
    return run, run.run


def test_the_taint_records_boot_id_and_system_uuid():
    cluster, _clock = after_outage()
    rec = records.read(cluster.nodes["w3"])
    info = cluster.nodes["w3"]["status"]["nodeInfo"]
    assert rec["identity"] == {"uid": "uid-w3", "boot_id": info["bootID"], "system_uuid": info["systemUUID"]}


def test_unchanged_boot_id_means_the_off_proof_was_false():
    cluster, clock = after_outage()
    back(cluster, clock, boot_id="boot-w3-1")  # Ready and renewing, but never rebooted
    run, go = recover(cluster, clock)
    with pytest.raises(ProofError, match="power-off proof was false"):
        go()
    w3 = cluster.nodes["w3"]
    assert has_out_of_service_taint(w3)
    rec = records.read(w3)
    assert rec["power_off_proof_false"]["boot_id"] == "boot-w3-1"
    assert rec["phase"] == records.OUTAGE_COMPLETE
    warning = cluster.events[-1][1]
    assert warning["type"] == "Warning" and warning["reason"] == "FailoverPowerOffProofFalse"
    assert run.changed  # the record and the Event were written
    assert cluster.leases == {}


def test_unchanged_boot_id_in_check_mode_writes_nothing():
    cluster, clock = after_outage()
    back(cluster, clock, boot_id="boot-w3-1")
    before = cluster.snapshot()
    _run, go = recover(cluster, clock, check_mode=True)
    with pytest.raises(ProofError, match="power-off proof was false"):
        go()
    assert cluster.snapshot() == before


def test_another_machine_behind_the_node_name_is_refused():
    cluster, clock = after_outage()
    back(cluster, clock)
    cluster.nodes["w3"]["status"]["nodeInfo"]["systemUUID"] = "00000000-0000-0000-0000-000000000001"
    before = cluster.snapshot()
    with pytest.raises(ProofError, match="same-machine"):
        recover(cluster, clock)[1]()
    assert cluster.snapshot() == before


def test_volume_attachment_still_naming_the_node_keeps_the_taint():
    cluster, clock = after_outage()
    clock.controllers.clear()  # no attach-detach controller: the stale attachment stays while node-recover watches
    back(cluster, clock)
    cluster.attachments.append(volume_attachment("csi-stale", "w3"))
    before = cluster.snapshot()
    with pytest.raises(ProofError, match="volumes-released: still attached: csi-stale"):
        recover(cluster, clock)[1]()
    assert cluster.snapshot() == before


def test_adopted_taint_still_checks_old_pods():
    cluster = dead_worker_cluster()
    clock = FakeClock()
    cluster.nodes["w3"]["spec"]["taints"] = [dict(OUT_OF_SERVICE_TAINT)]  # placed by hand, no record
    back(cluster, clock)
    cluster.pods = [pod("db-0", "w3", owner=("StatefulSet", "db"), created=T0 - 3600)]
    before = cluster.snapshot()
    with pytest.raises(ProofError, match="old-pods-gone: still bound: app/db-0"):
        recover(cluster, clock)[1]()
    assert cluster.snapshot() == before


def test_adopted_taint_cannot_show_a_restart():
    cluster = dead_worker_cluster()
    clock = FakeClock()
    cluster.nodes["w3"]["spec"]["taints"] = [dict(OUT_OF_SERVICE_TAINT)]
    back(cluster, clock)
    cluster.pods = []
    with pytest.raises(ProofError, match="restarted: no bootID was recorded at the taint"):
        recover(cluster, clock)[1]()


def test_lock_is_taken_before_the_checks():
    cluster, clock = after_outage()
    # not recovered (still NotReady), and another job holds the lock: the lock is what refuses
    cluster.leases[("nodeguard-system", "nodeguard-failover-w3")] = {
        "metadata": {"name": "nodeguard-failover-w3", "resourceVersion": "7"},
        "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 300, "renewTime": format_micro_time(clock.now())},
    }
    with pytest.raises(LockHeldError):
        recover(cluster, clock)[1]()


def test_recovery_with_restart_succeeds_and_lands_in_history():
    cluster, clock = after_outage()
    back(cluster, clock)
    result = recover(cluster, clock)[1]()
    assert result["changed"] and not result["tainted"]
    names = {c["name"] for c in result["checks"]}
    assert {"restarted", "same-machine", "volumes-released"} <= names
