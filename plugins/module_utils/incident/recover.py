# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Remove the out-of-service taint once the node is really back, and close the incident record.

All must hold first: out-of-band power reads On; the node is Ready, with a fresh Lease, for at least
``healthy_seconds``; no pod of the old incarnation is left on it. The taint removal and the record's
end are one conditional write.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import pods as podrules
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import timeline
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.events import Recorder
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import NodeLock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import (
    has_out_of_service_taint,
    is_ready,
    lease_age,
    ready_since,
    taints_without_out_of_service,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import Proof
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time, parse_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError


@dataclass
class RecoverOptions:
    node: str
    job_id: str
    healthy_seconds: int = 60
    lock_namespace: str = "nodeguard-system"
    lock_ttl_seconds: int = 120
    lock_wait_seconds: int = 0
    event_namespace: str = "default"


def recovery_checks(node: dict, lease, pods: list, power_reading, power_error, since, now: float, healthy_seconds) -> list:
    """The four conditions, as Proofs (pure)."""
    checks = []
    if power_error is not None:
        checks.append(Proof("power-on", False, f"out-of-band power state unreadable: {power_error}"))
    else:
        checks.append(Proof("power-on", power_reading.state == "on", f"{power_reading.method} reads {power_reading.state.upper()}"))
    ready_for = now - (ready_since(node) or now)
    checks.append(
        Proof(
            "ready",
            is_ready(node) and ready_for >= healthy_seconds,
            f"Ready for {ready_for:.0f}s (need {healthy_seconds}s)" if is_ready(node) else "node is not Ready",
        )
    )
    age, duration = lease_age(lease, now)
    fresh = age is not None and age <= duration
    checks.append(Proof("heartbeat", fresh, f"Lease renewed {age:.0f}s ago (limit {duration}s)" if age is not None else "no Lease"))
    old = podrules.old_incarnation(pods, since) if since else []
    checks.append(
        Proof(
            "old-pods-gone",
            not old,
            "none left" if not old else "still bound: " + ", ".join(f"{p['namespace']}/{p['name']}" for p in old),
        )
    )
    return checks


class RecoverRun:
    def __init__(self, cluster, power, options: RecoverOptions, clock, check_mode: bool = False):
        self.cluster = cluster
        self.power = power
        self.o = options
        self.clock = clock
        self.check_mode = check_mode
        self.recorder = None
        self.lock = NodeLock(
            cluster, options.lock_namespace, options.node, options.job_id, options.lock_ttl_seconds, clock, options.lock_wait_seconds
        )

    def _get_node(self) -> dict:
        node = self.cluster.get_node(self.o.node)
        if node is None:
            raise RefusedError("unknown-node", f"node {self.o.node!r} does not exist in the cluster; nothing was changed")
        return node

    def run(self) -> dict:
        node = self._get_node()
        record = records.read(node)
        if not has_out_of_service_taint(node):
            return self._result(node, record, [], False, "no out-of-service taint on the node; nothing to recover")
        if record is not None and record.get("phase") in records.OUTAGE_STEPS:
            raise RefusedError(
                "outage-running",
                f"the outage run on {self.o.node} is at step {record['phase']} (job {record.get('job')}), running or "
                "crashed; rerun node-outage first: it resumes, or stops cleanly if the node is back. Nothing was changed",
            )
        if record is None or record.get("phase") == records.RECOVERED:
            record = records.new(node, self.o.job_id, self.clock.now(), None)
            record["adopted"] = "taint found without a nodeguard record"
        since = parse_time(((record.get("steps") or {}).get("taint") or {}).get("end")) or parse_time(record.get("first_not_ready"))
        try:
            reading, error = self.power.status(), None
        except PowerError as e:
            reading, error = None, e
        checks = recovery_checks(
            node,
            self.cluster.get_node_lease(self.o.node),
            self.cluster.list_pods_on_node(self.o.node),
            reading,
            error,
            since,
            self.clock.now(),
            self.o.healthy_seconds,
        )
        missing = [c for c in checks if not c.ok]
        if missing:
            raise ProofError(
                f"{self.o.node} is not recovered yet, the taint stays and nothing was changed. Missing: " + "; ".join(f"{c.name}: {c.detail}" for c in missing)
            )
        if self.check_mode:
            self.lock.check_free()
            return self._result(node, record, checks, False, "check mode: would remove the out-of-service taint")

        self.lock.acquire()
        try:
            node = self._untaint(record)
        finally:
            self.lock.release()
        return self._result(node, record, checks, True, "taint removed, incident closed")

    def _untaint(self, record: dict) -> dict:
        for _attempt in range(10):
            node = self._get_node()
            if not is_ready(node):
                raise ProofError(f"{self.o.node} stopped being Ready; the taint stays and nothing was changed")
            now = self.clock.now()
            record["ready_again"] = format_time(ready_since(node) or now)
            records.start_step(record, records.RECOVER_STEP, now)
            records.end_step(record, records.RECOVER_STEP, now, "taint-removed")
            record["phase"] = records.RECOVERED
            record["recovered_by"] = self.o.job_id
            patch = records.annotations_patch(record)
            patch["metadata"]["resourceVersion"] = node["metadata"]["resourceVersion"]
            patch["spec"] = {"taints": taints_without_out_of_service(node)}
            self.lock.confirm()  # remove the taint only while this run provably holds the lock
            try:
                node = self.cluster.patch_node(self.o.node, patch)
            except ConflictError:
                continue  # heartbeats change the Node: re-read and try again
            self.recorder = Recorder(self.cluster, node, self.o.event_namespace, self.clock)
            self.recorder.event("FailoverRecovered", f"out-of-service taint removed (incident {record['id']})")
            return node
        raise RefusedError("busy-node", f"{self.o.node} kept changing while removing the taint; nothing was changed, retry")

    def _result(self, node: dict, record, checks: list, changed: bool, message: str) -> dict:
        rows = timeline.rows(record) if record else []
        return {
            "changed": changed,
            "node": self.o.node,
            "message": message,
            "tainted": has_out_of_service_taint(node),
            "checks": [c.as_dict() for c in checks],
            "record": record,
            "timeline": rows,
            "timeline_table": timeline.table(rows) if rows else "",
            "lock": self.lock.report(),
        }
