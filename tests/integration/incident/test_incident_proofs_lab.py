"""Proofs after the taint, on the real lab, as the least-privileged ServiceAccount (issue 11, defects 5, 8, 12).

1. Resume with the power back on. A fenced run is killed right after the taint; the machine is powered on again;
   the rerun resumes, proves again, finds the node back and stops with a clear message: taint kept, record
   ``interrupted`` with the step and the reason, kept in the durable history, and a Warning Event.
2. Recovery with an unchanged bootID. The taint of 1 is removed by hand; the kubelet of the worker is stopped while
   the machine stays on (a partition); an operator's false manual attestation says the machine is off, so
   node-outage taints it and moves its pods (the interrupted record of 1 goes into the history, not lost).
   The kubelet starts again: the node reports in with the bootID it had at the taint (the stand-in kubelet keeps
   its bootID across a kubelet restart; only a container restart, a machine boot, changes it). node-recover
   refuses: the power-off proof was false. The taint stays, the record says so, a Warning Event says so.
"""

from __future__ import annotations

import json
import time

import yaml
from test_incident_lab import (
    HISTORY_NAMESPACE,
    INVENTORY,
    NAMESPACE,
    has_taint,
    kill_tree,
    node_obj,
    node_proven_dead,
    playbook,
    record,
)

HISTORY_PREFIX = "nodeguard-history-"


def boot_id(lab, name) -> str:
    return node_obj(lab, name).status.node_info.boot_id


def history(lab, name) -> list:
    result = lab.kubectl("get", "configmap", "-n", HISTORY_NAMESPACE, HISTORY_PREFIX + name, "-o", "json", check=False)
    if result.returncode != 0:
        return []
    data = json.loads(result.stdout).get("data") or {}
    return sorted((json.loads(v) for v in data.values()), key=lambda r: r.get("started") or "")


def events(lab, name, reason) -> list:
    return lab.core().list_namespaced_event("default", field_selector=f"involvedObject.name={name},reason={reason}").items


def false_attestation(node: str) -> dict:
    """An operator's attestation that the node is off, for this node and the next hour: here it is false."""
    now = time.time()
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return {
        "type": "manual",
        "attestation": {
            "node": node,
            "state": "off",
            "operator": "lab-test@example.com",
            "reason": "integration test: a false attestation (the machine runs)",
            "not_before": time.strftime(stamp, time.gmtime(now - 120)),
            "expires": time.strftime(stamp, time.gmtime(now + 3600)),
        },
    }


def test_resume_with_the_power_back_on_stops_with_a_consistent_record(lab, remediator, db_worker, db_pod_on):
    lab.podman("exec", db_worker, "systemctl", "stop", "kubelet")
    lab.wait_for(lambda: node_proven_dead(lab, db_worker), timeout=150, interval=2, what=f"{db_worker} NotReady with a stale Lease")
    old_db = db_pod_on(lab, db_worker)
    assert old_db is not None
    pod_ref = ("pod", old_db.metadata.name, "-n", NAMESPACE)
    if pod_ref:  # hold the run in delete-pods, so it is killed after the taint and before it finishes
        lab.kubectl("patch", *pod_ref, "--type", "merge", "-p", json.dumps({"metadata": {"finalizers": ["nodeguard.test/hold"]}}))
    short_lock = {"node_outage_lock_ttl_seconds": 20, "node_outage_pod_delete_timeout": 240}
    try:
        run = playbook(remediator, "node_outage", db_worker, background=True, node_outage_fence=True, node_outage_fence_backoff_seconds=2, **short_lock)
        try:
            lab.wait_for(lambda: has_taint(lab, db_worker), timeout=180, interval=0.2, what="the out-of-service taint")
        finally:
            if run.poll() is None:
                kill_tree(run.pid)
            run.communicate()
        stopped = record(lab, db_worker)
        assert stopped["steps"]["fence"]["outcome"] == "powered-off"

        lab.power_on(db_worker)  # the machine is back on: the rerun must not act on the old proofs
        result = playbook(remediator, "node_outage", db_worker, node_outage_lock_wait_seconds=40, **short_lock)
    finally:
        if pod_ref:
            lab.kubectl("patch", *pod_ref, "--type", "merge", "-p", json.dumps({"metadata": {"finalizers": None}}), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-4000:]
    assert "came back during step" in output, output[-4000:]
    assert has_taint(lab, db_worker)
    interrupted = record(lab, db_worker)
    assert interrupted["id"] == stopped["id"]
    assert interrupted["phase"] == "interrupted"
    steps = ("prove", "fence", "taint", "delete-pods", "detach-volumes", "verify-replacements")
    resumed_at = next(step for step in steps if "end" not in stopped["steps"].get(step, {}))  # first unfinished step
    assert interrupted["interrupted"]["step"] == resumed_at
    assert interrupted["interrupted"]["reason"]
    print(f"\nresume stopped: {interrupted['interrupted']['reason']}")
    kept = {r["id"]: r for r in history(lab, db_worker)}
    assert kept[interrupted["id"]]["phase"] == "interrupted"
    assert events(lab, db_worker, "FailoverInterrupted")


def test_recovery_with_an_unchanged_boot_id_is_refused(lab, remediator, db_worker):
    # A new incident on the node the test above left tainted and interrupted: its taint is removed by hand, its
    # record must survive in the history when this incident replaces it on the Node.
    previous = record(lab, db_worker)
    lab.kubectl("taint", "nodes", db_worker, "node.kubernetes.io/out-of-service-", check=False)
    lab.wait_for(lambda: lab.node_ready(db_worker), timeout=120, interval=2, what=f"{db_worker} Ready")
    boot_before = boot_id(lab, db_worker)
    lab.podman("exec", db_worker, "systemctl", "stop", "kubelet")
    lab.wait_for(lambda: node_proven_dead(lab, db_worker), timeout=150, interval=2, what=f"{db_worker} NotReady with a stale Lease")
    result = playbook(
        remediator,
        "node_outage",
        db_worker,
        node_outage_allow_manual_attestation=True,
        node_outage_power_by_node={db_worker: false_attestation(db_worker)},
    )
    assert result.returncode == 0, lab.playbook_failure(result.stdout)
    tainted = record(lab, db_worker)
    assert tainted["phase"] == "outage-complete"
    assert tainted["identity"]["boot_id"] == boot_before and tainted["identity"]["system_uuid"]
    if previous is not None:
        assert tainted["previous"] == previous["id"]

    # The kubelet comes back on the machine that never stopped: same bootID (a kubelet restart keeps it).
    lab.podman("exec", db_worker, "systemctl", "start", "kubelet")
    lab.wait_for(lambda: lab.node_ready(db_worker), timeout=120, interval=2, what=f"{db_worker} Ready")
    assert boot_id(lab, db_worker) == boot_before

    bmc = yaml.safe_load(INVENTORY.read_text())["all"]["children"]["workers"]["hosts"][db_worker]["bmc"]
    result = playbook(remediator, "node_recover", db_worker, node_recover_retries=0, node_recover_power_by_node={db_worker: bmc})
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-4000:]
    assert "power-off proof was false" in output, output[-4000:]
    assert has_taint(lab, db_worker)
    refused = record(lab, db_worker)
    assert refused["phase"] == "outage-complete"
    assert refused["power_off_proof_false"]["boot_id"] == boot_before
    warnings = events(lab, db_worker, "FailoverPowerOffProofFalse")
    assert warnings and all(e.type == "Warning" for e in warnings)
    # The durable history has the incident with the finding, whatever happens to the Events.
    kept = {r["id"]: r for r in history(lab, db_worker)}
    assert "power_off_proof_false" in kept[refused["id"]]
    if previous is not None:
        assert kept[previous["id"]]["phase"] == "interrupted"
