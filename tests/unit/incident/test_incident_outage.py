"""The outage run end to end on a fake cluster: happy path, refusals, check mode, resume, node returning."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError, ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import (
    LockHeldError,
    NodeReturnedError,
    RefusedError,
    StepTimeoutError,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time, parse_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError
from incident_fakes import T0, FakeClock, FakePower, lease, node
from incident_scenario import options, setup


def run(cluster, clock, power, check_mode=False, **overrides):
    return OutageRun(cluster, power, options(**overrides), clock, check_mode).run()


def test_full_outage():
    cluster, clock, power = setup()
    result = run(cluster, clock, power)
    w3 = cluster.nodes["w3"]
    assert has_out_of_service_taint(w3)
    rec = records.read(w3)
    assert rec["phase"] == records.OUTAGE_COMPLETE
    assert all("end" in rec["steps"][s] for s in records.OUTAGE_STEPS)
    assert rec["steps"]["fence"]["outcome"] == "skipped"
    # mirror, DaemonSet and tolerating pods stay; the rest was force-deleted by uid
    assert sorted(rec["pods"]["force_deleted"]) == ["app/db-0", "app/web-123-abc"]
    left = sorted(p["metadata"]["name"] for p in cluster.pods if p["spec"]["nodeName"] == "w3")
    assert left == ["agent-x", "kube-proxy-w3", "sticky-0"]
    assert [t["name"] for t in rec["pods"]["tolerating"]] == ["sticky-0"]
    replaced = {r["pod"]: r for r in rec["replacements"]["replaced"]}
    assert replaced["app/db-0"]["node"] == "w1"
    assert replaced["app/web-123-abc"]["replacement"] == "app/web-123-xyz"
    assert replaced["app/db-0"]["seconds"] is not None
    # every step edge is an Event about the Node; the lock is gone again
    reasons = [body["reason"] for _namespace, body in cluster.events]
    assert reasons[:2] == ["FailoverPowerOffProven", "FailoverTainted"]
    assert reasons.count("FailoverStepCompleted") == 3
    assert all(body["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "w3", "uid": "uid-w3"} for _namespace, body in cluster.events)
    assert cluster.leases == {}
    assert result["changed"] and result["action"] == records.FRESH
    # pods were listed by node only
    assert {c[1] for c in cluster.calls if c[0] == "list_pods_on_node"} == {"w3"}


def test_second_run_is_a_no_op():
    cluster, clock, power = setup()
    run(cluster, clock, power)
    before = cluster.snapshot()
    result = run(cluster, clock, power)
    assert not result["changed"]
    assert result["action"] == records.COMPLETE
    assert cluster.snapshot() == before


def assert_refused_without_change(cluster, clock, power, error=NodeguardError, match=None, **overrides):
    before = cluster.snapshot()
    with pytest.raises(error, match=match):
        run(cluster, clock, power, **overrides)
    assert cluster.snapshot() == before
    assert not has_out_of_service_taint(cluster.nodes.get("w3") or {"spec": {}})


def test_refused_when_node_is_ready():
    cluster, clock, power = setup(w3_ready="True")
    cluster.node_leases["w3"] = lease("w3", T0 - 2)
    assert_refused_without_change(cluster, clock, power, ProofError, match="not-ready, lease-stale")


def test_refused_when_bmc_says_on():
    cluster, clock, _power = setup()
    assert_refused_without_change(cluster, clock, FakePower("on"), ProofError, match="power-off")


def test_refused_when_bmc_unreachable():
    cluster, clock, _power = setup()
    assert_refused_without_change(cluster, clock, FakePower(error="unreachable: connection refused"), ProofError, match="unreadable")


def test_refused_in_a_storm():
    cluster, clock, power = setup()
    assert_refused_without_change(cluster, clock, power, RefusedError, match="storm", max_unhealthy="0")


def test_refused_for_control_plane():
    cluster, clock, power = setup()
    assert_refused_without_change(cluster, clock, power, RefusedError, match="control-plane", node="cp1")


def test_refused_for_unknown_node():
    cluster, clock, power = setup()
    assert_refused_without_change(cluster, clock, power, RefusedError, match="does not exist", node="nope")


def test_refused_when_lock_is_held():
    cluster, clock, power = setup()
    cluster.leases[("nodeguard-system", "nodeguard-failover-w3")] = {
        "metadata": {"name": "nodeguard-failover-w3", "resourceVersion": "7"},
        "spec": {"holderIdentity": "other-job", "leaseDurationSeconds": 300, "renewTime": format_micro_time(T0 - 10)},
    }
    assert_refused_without_change(cluster, clock, power, LockHeldError, match="other-job")


def test_refused_on_old_kubernetes():
    cluster, clock, power = setup()
    cluster.version = "v1.23.17"
    assert_refused_without_change(cluster, clock, power, RefusedError, match="does not support")


def test_check_mode_shows_the_plan_and_changes_nothing():
    cluster, clock, power = setup()
    before = cluster.snapshot()
    result = run(cluster, clock, power, check_mode=True)
    assert cluster.snapshot() == before
    assert not result["changed"]
    steps = {p["step"]: p for p in result["plan"]}
    assert list(steps) == list(records.OUTAGE_STEPS)
    assert all(p["status"] == "pending" for p in steps.values())
    assert "app/db-0" in steps["delete-pods"]["action"]
    assert "sticky-0" in steps["delete-pods"]["action"]
    assert "csi-abc" in steps["detach-volumes"]["action"]
    assert all(p["ok"] for p in result["proofs"])


def test_fence_powers_off_with_retries_then_proves():
    cluster, clock, _power = setup()
    power = FakePower("on", off_takes=2)  # two failed tries before the BMC accepts
    run(cluster, clock, power, fence=True, fence_backoff_seconds=5)
    assert power.actions == ["off", "off", "off"]
    assert [s for s in clock.sleeps if s >= 5][:2] == [5, 10]  # the fence's backoff, after the Lease watch's polls
    rec = records.read(cluster.nodes["w3"])
    assert rec["steps"]["fence"]["outcome"] == "powered-off"
    assert "reboot" not in power.actions


def test_fence_is_not_attempted_while_the_api_sees_the_node_alive():
    cluster, clock, _power = setup(w3_ready="True")
    cluster.node_leases["w3"] = lease("w3", T0 - 2)
    power = FakePower("on")
    with pytest.raises(ProofError):
        run(cluster, clock, power, fence=True)
    assert power.actions == []


def test_crash_after_taint_resumes_where_it_stopped():
    cluster, clock, power = setup()
    cluster.fail_on["force_delete_pod"] = ConnectionError("job killed")
    with pytest.raises(ConnectionError):
        run(cluster, clock, power)
    w3 = cluster.nodes["w3"]
    assert has_out_of_service_taint(w3)
    assert records.decide(w3, records.read(w3)) == (records.RESUME, "delete-pods")
    # the lock Lease of the crashed run is still there (a real crash would not release it). A rerun, even under
    # the same job id, is refused at once; one that may wait takes it over once it saw the Lease unchanged for its TTL.
    cluster.leases[("nodeguard-system", "nodeguard-failover-w3")] = {
        "metadata": {"name": "nodeguard-failover-w3", "resourceVersion": "3"},
        "spec": {"holderIdentity": "job-1", "leaseDurationSeconds": 300, "renewTime": format_micro_time(clock.now())},
    }
    with pytest.raises(LockHeldError, match="'job-1'"):
        run(cluster, clock, power)
    taint_patches = sum(1 for c in cluster.calls if c[0] == "patch_node")
    result = run(cluster, clock, power, lock_wait_seconds=310)
    assert "'job-1'" in result["lock"]["took_over"]
    assert result["action"] == records.RESUME and result["resumed_from"] == "delete-pods"
    assert records.read(cluster.nodes["w3"])["phase"] == records.OUTAGE_COMPLETE
    assert sum(1 for c in cluster.calls if c[0] == "patch_node") > taint_patches


def test_node_returning_mid_run_stops_with_consistent_record():
    cluster, clock, power = setup()
    clock.controllers.clear()  # the volume never detaches, so the run is waiting when the node returns

    tainted = {}

    def node_comes_back(now):
        if has_out_of_service_taint(cluster.nodes["w3"]):
            tainted.setdefault("at", now)
        if "at" in tainted and now - tainted["at"] > 8:
            cluster.nodes["w3"]["status"]["conditions"][0]["status"] = "True"

    clock.controllers.append(node_comes_back)
    with pytest.raises(NodeReturnedError, match="node-recover"):
        run(cluster, clock, power)
    w3 = cluster.nodes["w3"]
    rec = records.read(w3)
    assert has_out_of_service_taint(w3)
    assert rec["phase"] == records.INTERRUPTED
    assert rec["interrupted"]["step"] == "detach-volumes"
    assert cluster.leases == {}
    # a rerun refuses instead of carrying on
    with pytest.raises(RefusedError, match="node-returned"):
        run(cluster, clock, power)


def test_volume_detach_timeout_reports_blockers_and_deletes_nothing():
    cluster, clock, power = setup()
    clock.controllers.clear()  # no attach-detach controller: the attachment stays
    with pytest.raises(StepTimeoutError, match=r"pv pv-db-0, driver csi\.example\.com"):
        run(cluster, clock, power, detach_timeout=10)
    assert [a["metadata"]["name"] for a in cluster.attachments] == ["csi-abc", "csi-other"]
    rec = records.read(cluster.nodes["w3"])
    assert rec["volume_blockers"][0]["pv"] == "pv-db-0"
    assert "end" not in rec["steps"]["detach-volumes"]


def test_volume_attachments_deleted_only_with_opt_in():
    cluster, clock, power = setup()
    clock.controllers.clear()
    with pytest.raises(StepTimeoutError, match="replacement"):
        run(cluster, clock, power, detach_timeout=10, delete_volume_attachments=True, replacement_timeout=5)
    assert ("delete_volume_attachment", "csi-abc") in cluster.calls
    assert ("delete_volume_attachment", "csi-other") not in cluster.calls


def test_taint_write_is_conditional_on_the_node_not_changing():
    cluster, clock, power = setup()
    cluster.fail_on["patch_node"] = ConflictError("changed")
    run(cluster, clock, power)  # re-reads and retries
    assert has_out_of_service_taint(cluster.nodes["w3"])


def test_proof_timeout_waits_until_not_ready_long_enough():
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node_not_ready_since(clock.now() - 5)
    result = run(cluster, clock, power, not_ready_seconds=20, proof_timeout=60)
    assert result["changed"] and has_out_of_service_taint(cluster.nodes["w3"])
    rec = records.read(cluster.nodes["w3"])
    waited = parse_time(rec["steps"]["prove"]["end"]) - parse_time(rec["steps"]["prove"]["start"])
    # Polled until NotReady for 20s (T0 + 15) and the Lease unchanged as watched from here for its renew interval +
    # margin (10 + 10 s, from T0). The Off pair was read during that wait: nothing follows it.
    assert 20 <= waited <= 20.5


def test_proof_timeout_gives_up_and_changes_nothing():
    cluster, clock, power = setup()
    cluster.nodes["w3"] = node_not_ready_since(clock.now() - 5)
    assert_refused_without_change(
        cluster, clock, power, ProofError, match=r"not-ready.*re-checked for 30s \(proof_timeout 30s\)", not_ready_seconds=120, proof_timeout=30
    )
    assert 29 <= sum(clock.sleeps) <= 30.01  # float sums of the waits


def test_proof_timeout_does_not_wait_for_a_ready_node():
    cluster, clock, power = setup(w3_ready="True")
    assert_refused_without_change(cluster, clock, power, ProofError, match="not-ready", proof_timeout=60)
    assert clock.sleeps == []


class TickingClock(FakeClock):
    """Time moves a little on every read, as a real clock does."""

    def now(self) -> float:
        self.t += 0.001
        return self.t


def test_without_proof_timeout_the_refusal_does_not_mention_waiting():
    cluster, _clock, power = setup(w3_ready="True")
    with pytest.raises(ProofError) as refused:
        run(cluster, TickingClock(), power)
    assert "re-checked" not in str(refused.value)


def node_not_ready_since(since):
    return node("w3", ready="Unknown", since=since)
