# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fenced non-graceful node failover for one node, as a resumable sequence of recorded steps.

    safety rules -> lock -> prove (not-ready, lease-stale: watched here) -> [fence off] -> prove power-off
    -> taint + record (one conditional write) -> force-delete pods -> wait for volume detach
    -> verify replacements -> outage-complete

Nothing is written before the taint: a refusal leaves the cluster as it was (the lock Lease is removed).
The taint is written against one fresh read, taken under the cluster lock (lock.ClusterLock, held until the
taint is written, so no other run decides the cluster-wide rules meanwhile): the Node list it re-checks storm,
quorum and control-plane status on, the target's resourceVersion (conditional write), its UID and Lease (not
renewed since the run began: a renewed Lease means the kubelet lives, as Ready does).
After the taint every step edge is recorded on the Node (conditional writes) and as an Event (best effort),
and copied into the node's durable history (once per destructive step, outage_steps.py), so a rerun continues
where a crash stopped, and node-recover knows what happened. A resumed run proves again before acting: same Node UID, not back, power still Off.
Before each destructive step (the taint included) the power-off proof must be at most ``proof_max_age_seconds``
old (monotonic clock) and a manual attestation not expired; and right before the taint and each batch of
force-deletes or VolumeAttachment deletes the power is read once more, identity shown (On stops the run).
"Came back" (Ready, a renewed Lease, a new bootID, power On) stops the run in any step.

The power-event path (``power_event_time`` set: a BMC said the node powered off) proves the same way without
waiting for NotReady: the event time is checked (power_event.py), the Lease must not change while watched on
this controller's monotonic clock (proofs.LeaseWatch) and the BMC must read Off twice with identity; a BMC
reading On refuses. The node may still be Ready in the API: that Ready (the transition the run first saw) is
not a sign of life, a newer one is.

OutageRun decides (fresh, adopt, resume, done), holds the locks and the state the parts share, and composes them:
outage_proof.py (ProofWatch: watch while waiting) with outage_triggers.py (what each trigger proves),
outage_taint.py (TaintWrite), outage_steps.py (AfterTaintSteps), outage_power.py (PowerChecks: fence, power
re-reads, proof age, attestations) and outage_resume.py (Resume).
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import attachments as vas
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import power_event, safety
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.args import outage_default
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import (
    NodeReturnedError,
    RefusedError,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.events import Recorder
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import ClusterLock, NodeLock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.node_list import RunNodeList
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import (
    has_out_of_service_taint,
    is_ready,
    ready_since,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import identity as identity_of
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_power import PowerChecks
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_proof import MAX_READINGS_KEPT, ProofWatch
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_resume import Resume
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_steps import AfterTaintSteps
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_taint import TaintWrite
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.plan import outage_plan
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import STOCK_REMEDIATION
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import (
    ClusterUniqueIdentity,
)

# MAX_READINGS_KEPT lives in outage_proof.py; it is still importable from here.
__all__ = ["MAX_READINGS_KEPT", "OutageOptions", "OutageRun"]


@dataclass
class OutageOptions:
    node: str
    job_id: str
    # The stock values; the module resolves them from the applied profile first (model/applied.py).
    not_ready_seconds: int = STOCK_REMEDIATION["not_ready_seconds"]
    lease_margin_seconds: int = STOCK_REMEDIATION["lease_margin_seconds"]
    proof_timeout: int = outage_default("proof_timeout")
    max_unhealthy: str = outage_default("max_unhealthy")
    allow_control_plane: bool = outage_default("allow_control_plane")
    out_of_service_gate_enabled: bool = outage_default("out_of_service_gate_enabled")
    fence: bool = outage_default("fence")
    fence_retries: int = outage_default("fence_retries")
    fence_backoff_seconds: float = outage_default("fence_backoff_seconds")
    fence_confirm_timeout: int = outage_default("fence_confirm_timeout")
    lock_namespace: str = outage_default("lock_namespace")
    history_namespace: str = outage_default("history_namespace")  # only the history ConfigMaps live there (deploy/rbac/, docs/rbac.md)
    lock_ttl_seconds: int = outage_default("lock_ttl_seconds")
    lock_wait_seconds: int = outage_default("lock_wait_seconds")
    event_namespace: str = outage_default("event_namespace")
    pod_delete_timeout: int = outage_default("pod_delete_timeout")
    detach_timeout: int = outage_default("detach_timeout")
    delete_volume_attachments: bool = outage_default("delete_volume_attachments")
    verify_replacements: bool = outage_default("verify_replacements")
    replacement_timeout: int = outage_default("replacement_timeout")
    poll_interval: float = outage_default("poll_interval")
    proof_max_age_seconds: int = outage_default("proof_max_age_seconds")
    # The power-event path: the event's RFC 3339 time (None: the heartbeat path) and how old it may be. How
    # often a live kubelet renews its Lease is read from the Lease itself (proofs.LeaseWatch).
    power_event_time: str | None = None
    # When the rulebook received the event, on its own clock (None: a run started by hand, its start is the arrival).
    power_event_received: str | None = None
    power_event_max_age_seconds: int = outage_default("power_event_max_age_seconds")


class OutageRun:
    def __init__(self, cluster, power, options: OutageOptions, clock, check_mode: bool = False):
        self.cluster = cluster
        # The full Node list: read fresh for each decision; the identity rule reuses the last one (node_list.py).
        self.node_list = RunNodeList(cluster)
        # A system UUID proves identity only when exactly one Node reports it (power/identity.py).
        self.power = ClusterUniqueIdentity(power, self.node_list.latest) if power is not None else None
        self.o = options
        self.clock = clock
        self.check_mode = check_mode
        self.facts = {}
        self.record = None
        self.recorder = None
        self.tainted = False  # this run wrote the taint: the result is changed, whatever fails later
        self.lease_seen = False
        self.lease_baseline = None  # renewTime text of the node's Lease when this run first looked: a token, not a time
        self.proof = ProofWatch(self)  # the proof phase: watch while waiting (outage_proof.py), per trigger
        self.power_checks = PowerChecks(self, power, clock)  # fence, re-read before destructive writes, proof age
        self.taint = TaintWrite(self)  # the taint and its record, one conditional write under the cluster lock
        self.steps = AfterTaintSteps(self)  # force-delete pods, detach volumes, verify replacements
        self.resume = Resume(self)  # a rerun continues at the step that did not end, after proving again
        # Power-event path: the event time (epoch) and the Ready transition the run first saw (None: not Ready).
        self.event_time = power_event.parse_event_time(options.power_event_time) if options.power_event_time is not None else None
        self.ready_baseline = None
        self.lock = NodeLock(cluster, options.lock_namespace, options.node, options.job_id, options.lock_ttl_seconds, clock, options.lock_wait_seconds)
        # Held only from the read the cluster-wide rules are decided on to the taint write (outage_taint.py).
        self.cluster_lock = ClusterLock(cluster, options.lock_namespace, options.node, options.job_id, options.lock_ttl_seconds, clock)

    # -- entry point ----------------------------------------------------------------------------
    def run(self) -> dict:
        node = self.get_node()
        action, step, done = self._decide(node)
        if done is not None:
            return done

        if self.check_mode:
            self.lock.check_free()
            if action in (records.FRESH, records.ADOPT):
                self.proof.prove_in_time(node)  # never waits, but for the power-event path's Lease silence window
            self.facts["attachments"] = [va["metadata"]["name"] for va in self.attachments()]
            return self._result(node, changed=False, message="check mode: nothing was changed")

        self.lock.acquire()
        try:
            # Decide again under the lock: another run may have tainted, finished or stopped meanwhile.
            node = self.get_node()
            action, step, done = self._decide(node)
            if done is not None:
                return done
            if action in (records.FRESH, records.ADOPT):
                node = self._prove_and_taint(node, adopt=action == records.ADOPT)
            else:
                self.resume.start(node, step)
            self.steps.run_all()
        finally:
            self.lock.release()
        return self._result(self.get_node(), changed=True, message="outage complete")

    @property
    def changed(self) -> bool:
        return self.tainted or bool(self.recorder and self.recorder.written)

    def new_recorder(self, node: dict) -> Recorder:
        return Recorder(self.cluster, node, self.o.event_namespace, self.clock, history_namespace=self.o.history_namespace, guard=self.lock.confirm)

    # -- safety rules ---------------------------------------------------------------------------
    def _check_event_age(self) -> None:
        """The power event's age when the rulebook received it (power_event_received, the rulebook's clock), not
        when this run starts: a run queued behind other nodes' runs is not stale. By hand, the run's start."""
        received = self.o.power_event_received
        if received is None:
            arrived, arrival = self.clock.now(), "the run started"
        else:
            arrived, arrival = power_event.parse_event_time(received, "power_event_received"), "the rulebook received it"
        power_event.check_event_age(self.event_time, arrived, self.o.power_event_max_age_seconds, arrival)

    def check_safety(self, node: dict, nodes: list) -> None:
        """Control plane (etcd members included), quorum, storm and other remediators, on one Node list. A node
        already carrying the out-of-service taint counts as down even while Ready (another run's power-event incident)."""
        etcd = safety.etcd_nodes(self.cluster.list_pods(safety.ETCD_POD_NAMESPACE, safety.ETCD_POD_SELECTOR))
        safety.check_control_plane(node, nodes, self.o.allow_control_plane, etcd)
        out_of_service = tuple(n["metadata"]["name"] for n in nodes if has_out_of_service_taint(n))
        safety.check_storm(nodes, self.o.max_unhealthy, down=(self.o.node, *out_of_service))
        safety.check_other_remediators(self.cluster, node)

    def back(self, node: dict, lease) -> str:
        """Why the node counts as back ('' when it does not): Ready, or a Lease renewed since the baseline.
        On the power-event path the Ready the run first saw is stale news, not life: only a newer one counts."""
        if is_ready(node) and not (self.event_time is not None and ready_since(node) == self.ready_baseline):
            return "became Ready"
        renewed = ((lease or {}).get("spec") or {}).get("renewTime")
        if renewed and renewed != self.lease_baseline:  # compared as tokens: the kubelet's clock is never read as time
            return f"renewed its Lease (renewTime {self.lease_baseline} -> {renewed}) after this incident started: its kubelet lives"
        return ""

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
            if self.event_time is not None:
                self._check_event_age()
            self.check_safety(node, self.node_list.read())
            safety.check_version(self.cluster.server_version(), self.o.out_of_service_gate_enabled)
            if not self.lease_seen:
                lease = self.cluster.get_node_lease(self.o.node)
                self.lease_baseline = ((lease or {}).get("spec") or {}).get("renewTime")
                self.proof.lease_watch.observe(lease)  # the watch starts at this run's first read of the Lease
                self.proof.note("lease", f"watch started (renewTime {self.lease_baseline}: the kubelet's clock, not compared)")
                self.ready_baseline = ready_since(node) if is_ready(node) else None
                self.lease_seen = True
        else:
            self.resume.restore_trigger()
        if self.power is None:
            # After the safety rules on purpose: a control-plane node is refused for that reason first.
            raise RefusedError(
                "no-power-source",
                f"No power source for {self.o.node}: give the power option for this node (its BMC, fence agent, hook or "
                "attestation); without one the power-off proof cannot hold. Nothing was changed",
            )
        return action, step, None

    # -- proofs and taint -----------------------------------------------------------------------
    def get_node(self) -> dict:
        node = self.cluster.get_node(self.o.node)
        if node is None:
            raise RefusedError(
                "unknown-node",
                f"node {self.o.node!r} does not exist in the cluster; no proof is possible, nothing was changed",
            )
        return node

    def _prove_and_taint(self, node: dict, adopt: bool) -> dict:
        self.power_checks.require_attestation_unused()
        started = self.clock.now()
        node = self.proof.prove_in_time(node)
        proven = self.clock.now()
        self.power_checks.proven_at = self.clock.monotonic()
        rec = records.new(node, self.o.job_id, started, None if is_ready(node) else ready_since(node))
        rec["lock_holder"] = self.lock.identity
        records.set_trigger(rec, self.event_time, self.ready_baseline)
        records.start_step(rec, "prove", started)
        records.end_step(rec, "prove", proven)
        if "fence_times" in self.facts:
            records.start_step(rec, "fence", self.facts["fence_times"][0])
            records.end_step(rec, "fence", self.facts["fence_times"][1], "powered-off")
        else:
            records.start_step(rec, "fence", proven)
            records.end_step(rec, "fence", proven, "skipped")
        rec["proofs"] = self.facts["proofs"]
        rec["readings"] = self.proof.readings
        rec["power"] = self.facts["power"]
        rec["pods"] = {
            "moved": self.facts["pods"]["delete"],
            "tolerating": self.facts["pods"]["tolerating"],
            "skipped": len(self.facts["pods"]["skipped"]),
        }
        node = self.taint.write(rec, adopt, node["metadata"].get("uid"))
        self.tainted = True
        self.record = rec
        self.recorder = self.new_recorder(node)
        self.recorder.archive(rec)
        power = self.facts["power"]
        self.recorder.event(
            "FailoverPowerOffProven",
            f"power-off proven ({power.get('method')}: {power.get('detail')}); incident {rec['id']}, job {rec['job']}",
        )
        self.recorder.event(
            "FailoverTainted",
            f"{'adopted existing' if adopt else 'added'} out-of-service taint (incident {rec['id']}, job {rec['job']}, trigger {records.trigger_text(rec)})",
        )
        return node

    # -- steps after the taint ------------------------------------------------------------------
    def ensure_still_down(self, step: str) -> None:
        """Stop cleanly if the node came back (Ready, its Lease renewed, or a new bootID): keep the taint,
        record why, let node-recover decide. Cheap (API reads): runs on every tick of a step's waits."""
        self.lock.renew()
        node = self.get_node()
        back = self.back(node, self.cluster.get_node_lease(self.o.node)) or self._rebooted(node)
        if back:
            self.interrupt(step, f"node {back} during the outage run")

    def _rebooted(self, node: dict) -> str:
        """Why the node counts as booted again since the taint ('' when it does not): a bootID other than the recorded one."""
        recorded = ((self.record or {}).get("identity") or {}).get("boot_id")
        now = identity_of(node).get("boot_id")
        if recorded and now and now != recorded:
            return f"booted again (bootID {recorded} -> {now})"
        return ""

    def interrupt(self, step: str, reason: str) -> None:
        self.record["phase"] = records.INTERRUPTED
        self.record["interrupted"] = {"step": step, "reason": reason}
        self.recorder.save(self.record)
        self.recorder.event(
            "FailoverInterrupted",
            f"{self.o.node}: {reason} (at {step}); stopped, taint kept and recorded, run node-recover",
            warning=True,
        )
        raise NodeReturnedError(
            f"{self.o.node} came back during step {step} ({reason}); the run stopped, the out-of-service taint stays and "
            f"is recorded (incident {self.record['id']}); run node-recover once the node is healthy"
        )

    # -- proving again after the taint ----------------------------------------------------------
    def attachments(self) -> list:
        return vas.on_node(self.cluster.list_volume_attachments(), self.o.node)

    # -- result ---------------------------------------------------------------------------------
    def _result(self, node: dict, changed: bool, message: str) -> dict:
        record = records.read(node) if not self.check_mode else self.record
        errors = self.recorder.errors if self.recorder else []
        if errors:
            message = f"{message}; {len(errors)} best-effort write(s) failed: {'; '.join(errors)}"
        if self.facts.get("cluster_lock_note"):
            message = f"{message}; {self.facts['cluster_lock_note']}"
        return {
            "changed": changed,
            "node": self.o.node,
            "action": self.facts.get("action"),
            "resumed_from": self.facts.get("resumed_from"),
            "message": message,
            "write_errors": errors,
            "power_rechecks": self.facts.get("power_rechecks", []),
            "tainted": has_out_of_service_taint(node),
            "proofs": self.facts.get("proofs", []),
            "power": self.facts.get("power"),
            "pods": self.facts.get("pods"),
            "plan": outage_plan(self.record if self.check_mode else record, self.facts, self.o),
            "record": record,
            "events": self.recorder.events if self.recorder else [],
            "lock": self.lock.report(),
        }
