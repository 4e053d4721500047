# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fenced non-graceful node failover for one node, as a resumable sequence of recorded steps.

    safety rules -> lock -> prove (not-ready, lease-stale) -> [fence off] -> prove power-off
    -> taint + record (one conditional write) -> force-delete pods -> wait for volume detach
    -> verify replacements -> outage-complete

Nothing is written before the taint: a refusal leaves the cluster as it was (the lock Lease is removed).
After the taint every step edge is recorded on the Node and as an Event, so a rerun continues where
a crash stopped, and node-recover knows what happened.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import attachments as vas
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import pods as podrules
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import replacements, safety
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import (
    MissingProofError,
    NodeReturnedError,
    RefusedError,
    StepTimeoutError,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.events import Recorder
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import NodeLock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import (
    has_out_of_service_taint,
    is_ready,
    ready_since,
    taints_with_out_of_service,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.plan import outage_plan
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import (
    Proof,
    prove_lease_stale,
    prove_not_ready,
    prove_power_off,
    require_all,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import wait_until
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, fence_off


@dataclass
class OutageOptions:
    node: str
    job_id: str
    not_ready_seconds: int = 60
    lease_margin_seconds: int = 10
    proof_timeout: int = 0
    max_unhealthy: str = "40%"
    allow_control_plane: bool = False
    out_of_service_gate_enabled: bool = False
    fence: bool = False
    fence_retries: int = 5
    fence_backoff_seconds: float = 5
    fence_confirm_timeout: int = 120
    lock_namespace: str = "nodeguard-system"
    lock_ttl_seconds: int = 120
    lock_wait_seconds: int = 0
    event_namespace: str = "default"
    pod_delete_timeout: int = 60
    detach_timeout: int = 360
    delete_volume_attachments: bool = False
    verify_replacements: bool = True
    replacement_timeout: int = 600
    poll_interval: float = 2.0


class _RenewingClock:
    """A clock that keeps the lock alive while fencing sleeps between tries and re-reads."""

    def __init__(self, clock, lock):
        self.clock = clock
        self.lock = lock

    def now(self) -> float:
        return self.clock.now()

    def sleep(self, seconds: float) -> None:
        self.lock.renew()
        self.clock.sleep(seconds)


class OutageRun:
    def __init__(self, cluster, power, options: OutageOptions, clock, check_mode: bool = False):
        self.cluster = cluster
        self.power = power
        self.o = options
        self.clock = clock
        self.check_mode = check_mode
        self.facts = {}
        self.record = None
        self.recorder = None
        self.lock = NodeLock(
            cluster, options.lock_namespace, options.node, options.job_id, options.lock_ttl_seconds, clock, options.lock_wait_seconds
        )

    # -- entry point ----------------------------------------------------------------------------
    def run(self) -> dict:
        node = self._get_node()
        action, step, done = self._decide(node)
        if done is not None:
            return done

        if self.check_mode:
            self.lock.check_free()
            if action in (records.FRESH, records.ADOPT):
                self._prove(node)
            self.facts["attachments"] = [va["metadata"]["name"] for va in self._attachments()]
            return self._result(node, changed=False, message="check mode: nothing was changed")

        self.lock.acquire()
        try:
            # Decide again under the lock: another run may have tainted, finished or stopped meanwhile.
            node = self._get_node()
            action, step, done = self._decide(node)
            if done is not None:
                return done
            if action in (records.FRESH, records.ADOPT):
                node = self._prove_and_taint(node, adopt=action == records.ADOPT)
            else:
                self.recorder = Recorder(self.cluster, node, self.o.event_namespace, self.clock, guard=self.lock.confirm)
                self.facts["resumed_from"] = step
            self._continue(node)
        finally:
            self.lock.release()
        return self._result(self._get_node(), changed=True, message="outage complete")

    def _decide(self, node: dict) -> tuple:
        """(action, step, result): what to do with the node; ``result`` set when there is nothing to do."""
        self.record = records.read(node)
        action, step = records.decide(node, self.record)
        self.facts["action"] = action
        if action == records.COMPLETE:
            return action, step, self._result(node, changed=False, message="outage already complete; run node-recover once the node is back")
        if action == records.STOPPED:
            raise RefusedError(
                "node-returned",
                f"an earlier run on {self.o.node} stopped because the node came back (incident {self.record.get('id')}); run node-recover",
            )
        if action in (records.FRESH, records.ADOPT):
            nodes = self.cluster.list_nodes()
            safety.check_control_plane(node, nodes, self.o.allow_control_plane)
            safety.check_storm(nodes, self.o.max_unhealthy)
            safety.check_version(self.cluster.server_version(), self.o.out_of_service_gate_enabled)
        return action, step, None

    # -- proofs and taint -----------------------------------------------------------------------
    def _get_node(self) -> dict:
        node = self.cluster.get_node(self.o.node)
        if node is None:
            raise RefusedError(
                "unknown-node",
                f"node {self.o.node!r} does not exist in the cluster; no proof is possible, nothing was changed",
            )
        return node

    def _prove(self, node: dict) -> list:
        """Evaluate all three proofs (fencing first when asked and allowed). Raises MissingProofError."""
        now = self.clock.now()
        proofs = [
            prove_not_ready(node, now, self.o.not_ready_seconds),
            prove_lease_stale(self.cluster.get_node_lease(self.o.node), now, self.o.lease_margin_seconds),
        ]
        reading, error = self._read_power()
        api_proven = all(p.ok for p in proofs)
        if self.o.fence and api_proven and reading is not None and reading.state != "off":
            if self.check_mode:
                self.facts["fence"] = f"power off via {self.power.method} (reads {reading.state.upper()} now), re-read until Off"
                proofs.append(Proof("power-off", True, f"would be established by fencing ({reading.detail})"))
            else:
                reading, error = self._fence()
                proofs.append(prove_power_off(reading, error))
        elif self.o.fence and not api_proven:
            self.facts["fence"] = "not attempted: the API does not show the node dead yet"
            proofs.append(prove_power_off(reading, error))
        else:
            if self.o.fence:
                self.facts["fence"] = "not needed: power already reads OFF"
            proofs.append(prove_power_off(reading, error))
        self.facts["proofs"] = [p.as_dict() for p in proofs]
        self.facts["power"] = reading.as_dict() if reading is not None else {"state": "unreadable", "detail": str(error)}
        self.facts["pods"] = podrules.classify(self.cluster.list_pods_on_node(self.o.node))
        require_all(proofs)
        return proofs

    def _read_power(self) -> tuple:
        try:
            return self.power.status(), None
        except PowerError as e:
            return None, e

    def _fence(self) -> tuple:
        started = self.clock.now()
        try:
            reading, attempts = fence_off(
                self.power,
                self.o.fence_retries,
                self.o.fence_backoff_seconds,
                self.o.fence_confirm_timeout,
                _RenewingClock(self.clock, self.lock),
            )
        except PowerError as e:
            self.facts["fence"] = f"failed: {e}"
            return None, e
        self.facts["fence"] = f"powered off via {self.power.method}: {'; '.join(attempts)}"
        self.facts["fence_times"] = (started, self.clock.now())
        return reading, None

    def _prove_in_time(self, node: dict) -> dict:
        """Prove, re-checking for up to proof_timeout seconds while a proof is only not *yet* true
        (an alert fired at the first NotReady). A node that is Ready again is refused at once."""
        started = self.clock.now()
        deadline = started + self.o.proof_timeout
        waiting = _RenewingClock(self.clock, self.lock)
        while True:
            try:
                self._prove(node)
                return node
            except MissingProofError as error:
                if is_ready(node) or self.clock.now() + self.o.poll_interval > deadline:
                    if self.o.proof_timeout > 0:
                        error.add_detail(f"re-checked for {self.clock.now() - started:.0f}s (proof_timeout {self.o.proof_timeout}s)")
                    raise
            waiting.sleep(self.o.poll_interval)
            node = self._get_node()

    def _prove_and_taint(self, node: dict, adopt: bool) -> dict:
        started = self.clock.now()
        node = self._prove_in_time(node)
        proven = self.clock.now()
        rec = records.new(node, self.o.job_id, started, ready_since(node))
        rec["lock_holder"] = self.lock.identity
        records.start_step(rec, "prove", started)
        records.end_step(rec, "prove", proven)
        if "fence_times" in self.facts:
            records.start_step(rec, "fence", self.facts["fence_times"][0])
            records.end_step(rec, "fence", self.facts["fence_times"][1], "powered-off")
        else:
            records.start_step(rec, "fence", proven)
            records.end_step(rec, "fence", proven, "skipped")
        rec["proofs"] = self.facts["proofs"]
        rec["power"] = self.facts["power"]
        rec["pods"] = {
            "moved": self.facts["pods"]["delete"],
            "tolerating": self.facts["pods"]["tolerating"],
            "skipped": len(self.facts["pods"]["skipped"]),
        }
        node = self._write_taint(rec, adopt)
        self.record = rec
        self.recorder = Recorder(self.cluster, node, self.o.event_namespace, self.clock, guard=self.lock.confirm)
        power = self.facts["power"]
        self.recorder.event(
            "FailoverPowerOffProven",
            f"power-off proven ({power.get('method')}: {power.get('detail')}); incident {rec['id']}, job {rec['job']}",
        )
        self.recorder.event(
            "FailoverTainted",
            f"{'adopted existing' if adopt else 'added'} out-of-service taint (incident {rec['id']}, job {rec['job']})",
        )
        return node

    def _write_taint(self, rec: dict, adopt: bool) -> dict:
        """Taint and record in one write, conditional on the node not having changed since the last read."""
        for _attempt in range(3):
            node = self._get_node()
            if is_ready(node):
                raise NodeReturnedError(f"{self.o.node} became Ready before the taint; nothing was changed")
            now = self.clock.now()
            records.start_step(rec, "taint", now)
            records.end_step(rec, "taint", now, "adopted" if adopt else "tainted")
            rec["phase"] = "taint"
            patch = records.annotations_patch(rec)
            patch["metadata"]["resourceVersion"] = node["metadata"]["resourceVersion"]
            patch["spec"] = {"taints": taints_with_out_of_service(node)}
            self.lock.confirm()  # the taint only while this run provably holds the lock
            try:
                return self.cluster.patch_node(self.o.node, patch)
            except ConflictError:
                continue  # the node changed (status update?): re-read and re-check Ready
        raise RefusedError("busy-node", f"{self.o.node} kept changing while tainting; nothing was changed, retry")

    # -- steps after the taint ------------------------------------------------------------------
    def _continue(self, node: dict) -> None:
        steps = {
            "delete-pods": self._delete_pods,
            "detach-volumes": self._detach_volumes,
            "verify-replacements": self._verify_replacements,
        }
        for step in records.OUTAGE_STEPS:
            if records.step_done(self.record, step):
                continue
            self._ensure_still_down(step)
            self.recorder.step_started(self.record, step)
            try:
                outcome = steps[step]()
            except StepTimeoutError as e:
                self.record["steps"][step]["error"] = str(e)
                self.recorder.save(self.record)
                self.recorder.event("FailoverStepTimedOut", f"{step}: {e}", warning=True)
                raise
            self.recorder.step_ended(self.record, step, outcome)
        self.record["phase"] = records.OUTAGE_COMPLETE
        self.recorder.save(self.record)
        self.recorder.event("FailoverOutageComplete", f"incident {self.record['id']}: outage steps complete")

    def _ensure_still_down(self, step: str) -> None:
        """Stop cleanly if the node came back: keep the taint, record why, let node-recover decide."""
        self.lock.renew()
        node = self._get_node()
        if not is_ready(node):
            return
        self.record["phase"] = records.INTERRUPTED
        self.record["interrupted"] = {"step": step, "reason": "node became Ready during the outage run"}
        self.recorder.save(self.record)
        self.recorder.event(
            "FailoverInterrupted",
            f"{self.o.node} became Ready during {step}; stopped, taint kept and recorded, run node-recover",
            warning=True,
        )
        raise NodeReturnedError(
            f"{self.o.node} came back (Ready) during step {step}; the run stopped, the out-of-service taint stays and "
            f"is recorded (incident {self.record['id']}); run node-recover once the node is healthy"
        )

    def _tick(self, step: str):
        def tick(_elapsed):
            self._ensure_still_down(step)

        return tick

    def _delete_pods(self) -> str:
        found = podrules.classify(self.cluster.list_pods_on_node(self.o.node))
        deleted = []
        for pod in found["delete"]:
            self.lock.renew()  # confirmed when the step started; keep it alive through a long list
            if self.cluster.force_delete_pod(pod["namespace"], pod["name"], pod["uid"]):
                deleted.append(f"{pod['namespace']}/{pod['name']}")
        self.record["pods"]["force_deleted"] = deleted
        self.record["pods"]["tolerating"] = found["tolerating"] or self.record["pods"].get("tolerating", [])
        uids = {p["uid"] for p in found["delete"]}

        def gone():
            return not [p for p in self.cluster.list_pods_on_node(self.o.node) if p["metadata"]["uid"] in uids]

        ok = wait_until(gone, self.o.pod_delete_timeout, self.o.poll_interval, self.clock, self._tick("delete-pods"))
        if not ok:
            raise StepTimeoutError(f"pods force-deleted but still listed after {self.o.pod_delete_timeout}s (finalizers?): {', '.join(deleted)}")
        return f"force-deleted {len(deleted)} pod(s)"

    def _attachments(self) -> list:
        return vas.on_node(self.cluster.list_volume_attachments(), self.o.node)

    def _detach_volumes(self) -> str:
        tick = self._tick("detach-volumes")
        ok = wait_until(lambda: not self._attachments(), self.o.detach_timeout, self.o.poll_interval, self.clock, tick)
        if ok:
            return "no VolumeAttachment left"
        blockers = vas.blockers(self._attachments(), self.clock.now())
        self.record["volume_blockers"] = blockers
        if not self.o.delete_volume_attachments:
            raise StepTimeoutError(
                f"VolumeAttachments still name {self.o.node} after {self.o.detach_timeout}s: {vas.describe(blockers)}. "
                "Check the CSI driver; set delete_volume_attachments=true only if the node is certainly off"
            )
        self.lock.confirm()
        for blocker in blockers:
            self.cluster.delete_volume_attachment(blocker["name"])
        ok = wait_until(lambda: not self._attachments(), self.o.detach_timeout, self.o.poll_interval, self.clock, tick)
        if not ok:
            left = vas.blockers(self._attachments(), self.clock.now())
            raise StepTimeoutError(f"VolumeAttachments deleted but still present: {vas.describe(left)}")
        return f"deleted {len(blockers)} VolumeAttachment(s) (opted in)"

    def _verify_replacements(self) -> str:
        if not self.o.verify_replacements:
            return "skipped"
        moved = replacements.resolve_deployments(self.cluster, self.record["pods"].get("moved", []))
        since = parse_time(self.record["steps"]["taint"]["end"])
        state = {}

        def all_replaced():
            state["result"] = replacements.match(moved, replacements.gather_candidates(self.cluster, moved), self.o.node, since)
            return not state["result"]["waiting"]

        ok = wait_until(all_replaced, self.o.replacement_timeout, self.o.poll_interval, self.clock, self._tick("verify-replacements"))
        self.record["replacements"] = state["result"]
        if not ok:
            waiting = ", ".join(f"{w['pod']} ({w['owner']})" for w in state["result"]["waiting"])
            raise StepTimeoutError(f"no Ready replacement after {self.o.replacement_timeout}s for: {waiting}")
        return f"{len(state['result']['replaced'])} replacement(s) Ready"

    # -- result ---------------------------------------------------------------------------------
    def _result(self, node: dict, changed: bool, message: str) -> dict:
        record = records.read(node) if not self.check_mode else self.record
        return {
            "changed": changed,
            "node": self.o.node,
            "action": self.facts.get("action"),
            "resumed_from": self.facts.get("resumed_from"),
            "message": message,
            "tainted": has_out_of_service_taint(node),
            "proofs": self.facts.get("proofs", []),
            "power": self.facts.get("power"),
            "pods": self.facts.get("pods"),
            "plan": outage_plan(self.record if self.check_mode else record, self.facts, self.o),
            "record": record,
            "events": self.recorder.events if self.recorder else [],
            "lock": self.lock.report(),
        }
