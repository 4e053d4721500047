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
and copied into the node's durable history, so a rerun continues where a crash stopped, and node-recover
knows what happened. A resumed run proves again before acting: same Node UID, not back, power still Off.
Before each destructive step (the taint included) the power-off proof must be at most ``proof_max_age_seconds``
old (monotonic clock) and a manual attestation not expired; and right before the taint and each batch of
force-deletes or VolumeAttachment deletes the power is read once more, identity shown (On stops the run).
"Came back" (Ready, a renewed Lease, a new bootID, power On) stops the run in any step.

The power-event path (``power_event_time`` set: a BMC said the node powered off) proves the same way without
waiting for NotReady: the event time is checked (power_event.py), the Lease must not change while watched on
this controller's monotonic clock (proofs.LeaseWatch) and the BMC must read Off twice with identity; a BMC
reading On refuses. The node may still be Ready in the API: that Ready (the transition the run first saw) is
not a sign of life, a newer one is.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import attachments as vas
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history, power_event, safety
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import pods as podrules
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.args import outage_default
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import (
    MissingProofError,
    NodeReturnedError,
    RefusedError,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.events import Recorder
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import ClusterLock, NodeLock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import (
    has_out_of_service_taint,
    is_ready,
    ready_since,
    taints_with_out_of_service,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import identity as identity_of
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_power import PowerChecks, RenewingClock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_steps import AfterTaintSteps
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.plan import outage_plan
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import (
    LeaseWatch,
    Proof,
    prove_not_ready,
    prove_power_off,
    require_all,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time, format_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import STOCK_REMEDIATION
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import (
    ClusterUniqueIdentity,
    is_statement,
    off_confirm_seconds,
    read_once,
    read_with_identity,
)

# Proof-phase readings kept on the incident record (a Node annotation): a long wait keeps its first and last ones.
MAX_READINGS_KEPT = 60


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
    power_event_max_age_seconds: int = outage_default("power_event_max_age_seconds")


class OutageRun:
    def __init__(self, cluster, power, options: OutageOptions, clock, check_mode: bool = False):
        self.cluster = cluster
        # A system UUID proves identity only when exactly one Node reports it (power/identity.py).
        self.power = ClusterUniqueIdentity(power, cluster.list_nodes) if power is not None else None
        self.o = options
        self.clock = clock
        self.check_mode = check_mode
        self.facts = {}
        self.record = None
        self.recorder = None
        self.tainted = False  # this run wrote the taint: the result is changed, whatever fails later
        self.lease_seen = False
        self.lease_baseline = None  # renewTime text of the node's Lease when this run first looked: a token, not a time
        self.lease_watch = LeaseWatch(clock, options.lease_margin_seconds)  # the Lease's silence, watched here (both paths)
        self.power_checks = PowerChecks(self, power, clock)  # fence, re-read before destructive writes, proof age
        self.steps = AfterTaintSteps(self)  # force-delete pods, detach volumes, verify replacements
        # Power-event path: the event time (epoch) and the Ready transition the run first saw (None: not Ready).
        self.event_time = power_event.parse_event_time(options.power_event_time) if options.power_event_time is not None else None
        self.ready_baseline = None
        self.first_off_at = None  # monotonic time of the first Off reading (identity shown) of the pair, both paths
        self.lease_silent_at = None  # monotonic time at which the Lease's silence can be proven (None: unknown or never)
        self.not_ready_at = None  # heartbeat path: monotonic time at which NotReady will have lasted not_ready_seconds
        self.watch_pending = False  # the last proof attempt missed only what waiting for the Lease watch gives
        self.readings = []  # what the proof phase read, and when: the incident timeline's proof rows (_note)
        self.noted = set()  # the once-only readings already noted (the Lease watch's end, NotReady long enough)
        self.lock = NodeLock(cluster, options.lock_namespace, options.node, options.job_id, options.lock_ttl_seconds, clock, options.lock_wait_seconds)
        # Held only from the read the cluster-wide rules are decided on to the taint write (_write_taint).
        self.cluster_lock = ClusterLock(cluster, options.lock_namespace, options.node, options.job_id, options.lock_ttl_seconds, clock)

    # -- entry point ----------------------------------------------------------------------------
    def run(self) -> dict:
        node = self._get_node()
        action, step, done = self._decide(node)
        if done is not None:
            return done

        if self.check_mode:
            self.lock.check_free()
            if action in (records.FRESH, records.ADOPT):
                self._prove_in_time(node)  # never waits, but for the power-event path's Lease silence window
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
                self.recorder = self._recorder(node)
                self.facts["resumed_from"] = step
                self._reprove_resume(node, step)
            self.steps.run_all()
        finally:
            self.lock.release()
        return self._result(self._get_node(), changed=True, message="outage complete")

    @property
    def changed(self) -> bool:
        return self.tainted or bool(self.recorder and self.recorder.written)

    def _recorder(self, node: dict) -> Recorder:
        return Recorder(self.cluster, node, self.o.event_namespace, self.clock, history_namespace=self.o.history_namespace, guard=self.lock.confirm)

    # -- safety rules ---------------------------------------------------------------------------
    def _check_safety(self, node: dict, nodes: list) -> None:
        """Control plane (etcd members included), quorum, storm and other remediators, on one Node list. A node
        already carrying the out-of-service taint counts as down even while Ready (another run's power-event incident)."""
        etcd = safety.etcd_nodes(self.cluster.list_pods(safety.ETCD_POD_NAMESPACE, safety.ETCD_POD_SELECTOR))
        safety.check_control_plane(node, nodes, self.o.allow_control_plane, etcd)
        out_of_service = tuple(n["metadata"]["name"] for n in nodes if has_out_of_service_taint(n))
        safety.check_storm(nodes, self.o.max_unhealthy, down=(self.o.node, *out_of_service))
        safety.check_other_remediators(self.cluster, node)

    def _back(self, node: dict, lease) -> str:
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
                power_event.check_event_age(self.event_time, self.clock.now(), self.o.power_event_max_age_seconds)
            self._check_safety(node, self.cluster.list_nodes())
            safety.check_version(self.cluster.server_version(), self.o.out_of_service_gate_enabled)
            if not self.lease_seen:
                lease = self.cluster.get_node_lease(self.o.node)
                self.lease_baseline = ((lease or {}).get("spec") or {}).get("renewTime")
                self.lease_watch.observe(lease)  # the watch starts at this run's first read of the Lease
                self._note("lease", f"watch started (renewTime {self.lease_baseline}: the kubelet's clock, not compared)")
                self.ready_baseline = ready_since(node) if is_ready(node) else None
                self.lease_seen = True
        else:
            self.lease_baseline = self.record.get("lease_renew_time")
            # The incident's own trigger decides how "back" is judged, not the option of this run.
            self.event_time, self.ready_baseline = records.power_event_of(self.record)
        if self.power is None:
            # After the safety rules on purpose: a control-plane node is refused for that reason first.
            raise RefusedError(
                "no-power-source",
                f"No power source for {self.o.node}: give the power option for this node (its BMC, fence agent, hook or "
                "attestation); without one the power-off proof cannot hold. Nothing was changed",
            )
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
        """Evaluate all three proofs once: one check of the watch-while-waiting loop (_prove_in_time), reading the
        Node, its Lease and its power. Fences first when asked and allowed. Raises MissingProofError.

        Power counts only from a device shown to be this node's (power/identity.py), and Off only when it
        holds in two readings some seconds apart. A device not shown to be this node's is never fenced."""
        if self.event_time is not None:
            return self._prove_power_event(node)
        lease = self.cluster.get_node_lease(self.o.node)
        since = None if is_ready(node) else ready_since(node)
        self.not_ready_at = None if since is None else self.clock.monotonic() + since + self.o.not_ready_seconds - self.clock.now()
        proofs = [
            prove_not_ready(node, self.clock.now(), self.o.not_ready_seconds),
            # Silence watched on our monotonic clock from this run's first read (the NotReady wait overlaps it).
            self.lease_watch.proof(lease, name="lease-stale"),
        ]
        self.lease_silent_at = self.lease_watch.silent_at(lease)
        self._note_held(proofs)
        api_proven = all(p.ok for p in proofs)
        # Power is read on every check of the wait, so the Off pair is complete when the other proofs hold.
        reading, error, identity = self._off_pair_reading(node, others_hold=api_proven)
        # Only the watch is missing (NotReady long enough, power not against it): the run waits for it, whatever proof_timeout.
        power_may_hold = identity is not None and identity.ok and (reading.state == "off" or self.o.fence)
        self.watch_pending = proofs[0].ok and power_may_hold and self._watch_can_complete(proofs[1])
        if self.o.fence and api_proven and reading is not None and reading.state != "off" and identity.ok:
            if self.check_mode:
                self.facts["fence"] = f"power off via {self.power.method} (reads {reading.state.upper()} now), re-read until Off"
                proofs.append(Proof("power-off", True, f"would be established by fencing ({reading.detail}); identity: {identity.detail}"))
            else:
                reading, error, identity = self.power_checks.fence(node)
                proofs.append(prove_power_off(reading, error, identity))
        elif self.o.fence and reading is not None and identity is not None and not identity.ok:
            self.facts["fence"] = "not attempted: the power device is not shown to be this node's"
            proofs.append(prove_power_off(reading, error, identity))
        elif self.o.fence and not api_proven:
            self.facts["fence"] = "not attempted: the API does not show the node dead yet"
            proofs.append(prove_power_off(reading, error, identity))
        else:
            if self.o.fence:
                self.facts["fence"] = "not needed: power already reads OFF" if reading is not None else "not attempted: power unreadable"
            proofs.append(prove_power_off(reading, error, identity))
        self.facts["proofs"] = [p.as_dict() for p in proofs]
        self.facts["power"] = reading.as_dict() if reading is not None else {"state": "unreadable", "detail": str(error)}
        if identity is not None:
            self.facts["power"]["identity"] = identity.as_dict()
        self.facts["pods"] = podrules.classify(self.cluster.list_pods_on_node(self.o.node))
        require_all(proofs)
        return proofs

    def _prove_power_event(self, node: dict) -> list:
        """The power-event path's proofs (power_event.py): the Lease silent as watched from here (LeaseWatch),
        then the BMC Off twice with identity. Never fences: the event says Off, a reading of On contradicts it
        and refuses, as does a Lease that changes while watched."""
        lease = self.cluster.get_node_lease(self.o.node)
        power_event.check_lease_not_renewed_since(lease, self.event_time, self.o.node)
        proofs = [self.lease_watch.proof(lease)]
        if self.lease_watch.changed_to is not None:
            raise RefusedError(
                "lease-renewed",
                f"the Lease of {self.o.node} changed while this run watched it ({proofs[0].detail}), although a power event "
                f"said Off at {format_time(self.event_time)}: its kubelet lives (its clock is not trusted either way); nothing was changed",
            )
        self.lease_silent_at = self.lease_watch.silent_at(lease)
        self.watch_pending = self._watch_can_complete(proofs[0])
        self._note_held(proofs)
        reading, error, identity = self._off_pair_reading(node, others_hold=proofs[0].ok)
        proofs.append(prove_power_off(reading, error, identity))
        self.facts["proofs"] = [p.as_dict() for p in proofs]
        self.facts["power"] = reading.as_dict() if reading is not None else {"state": "unreadable", "detail": str(error)}
        if identity is not None:
            self.facts["power"]["identity"] = identity.as_dict()
        if reading is not None and reading.state == "on" and identity is not None and identity.ok:
            raise RefusedError(
                "power-on",
                f"{reading.method} of {self.o.node} reads power ON now ({reading.detail}), although a power event said Off at "
                f"{format_time(self.event_time)}: the node may run; nothing was changed",
            )
        if self.o.fence:
            self.facts["fence"] = "not used on the power-event path: the event says Off, the proof reads it"
        self.facts["pods"] = podrules.classify(self.cluster.list_pods_on_node(self.o.node))
        require_all(proofs)
        return proofs

    def _watch_can_complete(self, lease_proof: Proof) -> bool:
        """True when the Lease proof failed only for want of watching time: no change seen, a watch this run can wait for."""
        return not lease_proof.ok and self.lease_silent_at is not None

    def _off_pair_reading(self, node: dict, others_hold: bool) -> tuple:
        """(PowerReading, PowerError, IdentityVerdict) of the power reading taken at this check of the wait (both
        paths): the two Off readings overlap the wait for the other proofs (NotReady, the Lease watch) instead of
        following it. The first Off reading (identity shown) is remembered; once the other proofs hold, a reading
        at least off_confirm_seconds after it confirms Off, and it is the one taken now, so the last reading is
        fresh (the run sleeps only for what is left of that interval). A reading that is not Off with identity
        shown starts the pair again. A manual attestation is read once."""
        waiting = RenewingClock(self.clock, self.lock)
        try:
            while True:
                reading, identity = read_with_identity(self.power, node)
                self._note_power_reading(reading, identity)
                if reading.state != "off" or not identity.ok:
                    if self.first_off_at is not None and identity.ok:
                        apart = self.clock.monotonic() - self.first_off_at
                        reading = reading._replace(detail=f"read OFF, then {reading.state.upper()} {apart:.0f}s later (rebooting?): {reading.detail}")
                    self.first_off_at = None
                    return reading, None, identity
                if self.first_off_at is None:
                    self.first_off_at = self.clock.monotonic()
                apart = self.clock.monotonic() - self.first_off_at
                if is_statement(self.power):
                    return read_once(reading), None, identity
                if not others_hold:
                    return reading._replace(detail=f"OFF for {apart:.0f}s so far (confirmed once the other proofs hold): {reading.detail}"), None, identity
                if apart >= off_confirm_seconds(self.power):
                    return reading._replace(detail=f"OFF in two readings {apart:.0f}s apart: {reading.detail}"), None, identity
                waiting.sleep(off_confirm_seconds(self.power) - apart)
        except PowerError as e:
            self.first_off_at = None
            self._note("power", f"unreadable: {e}")
            return None, e, None

    def _note_power_reading(self, reading, identity) -> None:
        shown = "identity shown" if identity.ok else "identity NOT shown"
        self._note("power", f"{reading.state.upper()} ({reading.method}, {shown})")

    def _note_held(self, proofs: list) -> None:
        """On the timeline: the moment each of these proofs first held (NotReady long enough, the Lease silent)."""
        for proof in proofs:
            if proof.ok and proof.name not in self.noted:
                self.noted.add(proof.name)
                self._note(proof.name, f"holds: {proof.detail}")

    def _note(self, what: str, result: str) -> None:
        """One reading of the proof phase, on the incident's timeline (timeline.py): what was read, when (wall clock,
        for the record only) and what it showed. A long wait keeps its first and its last readings."""
        self.readings.append({"time": format_micro_time(self.clock.now()), "reading": what, "result": result})
        if len(self.readings) > MAX_READINGS_KEPT:  # drop the oldest power reading past the first few
            dropped = next((i for i, r in enumerate(self.readings) if i >= MAX_READINGS_KEPT // 4 and r["reading"] == "power"), None)
            if dropped is not None:
                del self.readings[dropped]

    def _prove_in_time(self, node: dict) -> dict:
        """Watch while waiting: prove, re-checking for up to proof_timeout seconds while a proof is only not *yet* true
        (an alert fired at the first NotReady). Each check reads the Node (NotReady), its Lease (the watch) and its
        power (the Off pair, _off_pair_reading) on one monotonic schedule (_until_next_check), so the proofs run in
        parallel with the waits. A node that is Ready again is refused at once. When only the Lease
        watch is missing, the run waits for it even past proof_timeout (at most one renew interval plus the margin,
        LONGEST_LEASE_WATCH_SECONDS at most): silence is watched, it cannot be read off a timestamp. On the heartbeat
        path the watch runs during the NotReady wait, so it costs nothing when the run starts at NotReady."""
        started = self.clock.monotonic()
        deadline = started + (0 if self.check_mode else self.o.proof_timeout)
        waiting = RenewingClock(self.clock, self.lock)
        while True:
            try:
                self._prove(node)
                return node
            except MissingProofError as error:
                back = self._back(node, self.cluster.get_node_lease(self.o.node))
                if back:
                    error.add_detail(f"{self.o.node} {back}; not waiting for it to go down again")
                    raise
                left = deadline - self.clock.monotonic()
                if left <= 0 and not self.watch_pending:
                    if self.o.proof_timeout > 0:
                        error.add_detail(f"re-checked for {self.clock.monotonic() - started:.0f}s (proof_timeout {self.o.proof_timeout}s)")
                    raise
                waiting.sleep(self._until_next_check() if left <= 0 else min(self._until_next_check(), left))
            node = self._get_node()

    def _until_next_check(self) -> float:
        """The poll interval, or less when a missing proof is known to hold sooner: the Lease watch ends, and NotReady
        has lasted not_ready_seconds, at times known in advance; every second counts there."""
        now = self.clock.monotonic()
        due = [at - now + 0.1 for at in (self.lease_silent_at, self.not_ready_at) if at is not None and at > now]
        return min([self.o.poll_interval, *due])

    def _prove_and_taint(self, node: dict, adopt: bool) -> dict:
        self.power_checks.require_attestation_unused()
        started = self.clock.now()
        node = self._prove_in_time(node)
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
        rec["readings"] = self.readings
        rec["power"] = self.facts["power"]
        rec["pods"] = {
            "moved": self.facts["pods"]["delete"],
            "tolerating": self.facts["pods"]["tolerating"],
            "skipped": len(self.facts["pods"]["skipped"]),
        }
        node = self._write_taint(rec, adopt, node["metadata"].get("uid"))
        self.tainted = True
        self.record = rec
        self.recorder = self._recorder(node)
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

    def _fresh_read(self, proven_uid) -> dict:
        """One Node list, re-checked right before the taint: the target from it is what the taint is written against."""
        nodes = self.cluster.list_nodes()
        node = next((n for n in nodes if n["metadata"]["name"] == self.o.node), None)
        if node is None:
            raise RefusedError("unknown-node", f"node {self.o.node} was deleted before the taint; nothing was changed")
        if proven_uid and node["metadata"].get("uid") != proven_uid:
            raise RefusedError("node-replaced", f"node {self.o.node} was re-created (new UID) after the proofs; nothing was changed")
        lease = self.cluster.get_node_lease(self.o.node)
        back = self._back(node, lease)
        if back:
            raise NodeReturnedError(f"{self.o.node} {back} before the taint; nothing was changed")
        self._check_safety(node, nodes)
        self.facts["lease_renew_time"] = ((lease or {}).get("spec") or {}).get("renewTime")
        return node

    def _archive_previous(self, node: dict, rec: dict) -> None:
        """A record already on the Node (recovered, interrupted, or its taint removed by hand) goes into the
        history before the new one replaces it; if that fails, nothing is written."""
        previous = records.read(node)
        if previous is None or previous.get("id") == rec["id"]:
            return
        history.upsert(self.cluster, self.o.history_namespace, previous)
        rec["previous"] = previous.get("id")

    def _write_taint(self, rec: dict, adopt: bool, proven_uid=None) -> dict:
        """Taint and record in one write, conditional on the fresh read (_fresh_read) it was decided on. The cluster
        lock is held from that read to the write: no other run decides the cluster-wide rules meanwhile."""
        self.cluster_lock.acquire()
        try:
            return self._write_taint_decided(rec, adopt, proven_uid)
        finally:
            self.cluster_lock.release()
            if self.cluster_lock.release_note:
                self.facts["cluster_lock_note"] = self.cluster_lock.release_note

    def _write_taint_decided(self, rec: dict, adopt: bool, proven_uid=None) -> dict:
        for _attempt in range(3):
            node = self._fresh_read(proven_uid)
            self._archive_previous(node, rec)
            records.set_identity(rec, node)
            rec["lease_renew_time"] = self.facts.get("lease_renew_time")
            now = self.clock.now()
            records.start_step(rec, "taint", now)
            records.end_step(rec, "taint", now, "adopted" if adopt else "tainted")
            rec["phase"] = "taint"
            patch = records.annotations_patch(rec)
            patch["metadata"]["resourceVersion"] = node["metadata"]["resourceVersion"]
            patch["spec"] = {"taints": taints_with_out_of_service(node)}
            self.power_checks.require_attestation_valid("before the taint")
            self.power_checks.at_point_of_action("taint", "the taint", node)
            self.lock.confirm()  # the taint only while this run provably holds the node's lock
            self.cluster_lock.confirm()  # and the cluster lock its decision was made under
            try:
                return self.cluster.patch_node(self.o.node, patch)
            except ConflictError:
                continue  # the node changed (status update?): re-read and re-check everything
            except ClusterError as e:  # e.g. the admission policy (deploy/admission/) denied the taint: its message
                raise RefusedError("taint-refused", self._taint_refused(e)) from e
        raise RefusedError("busy-node", f"{self.o.node} kept changing while tainting; nothing was changed, retry")

    def _taint_refused(self, error) -> str:
        text = f"the API did not take the taint and its record (one write): {error}"
        if self.event_time is not None:
            text += (
                ". On the power-event path the node may still be Ready: the admission policy nodeguard-out-of-service-taint "
                "allows that only with powerEventPath true (docs/runbooks/node-outage.md)"
            )
        return text

    # -- steps after the taint ------------------------------------------------------------------
    def _ensure_still_down(self, step: str) -> None:
        """Stop cleanly if the node came back (Ready, its Lease renewed, or a new bootID): keep the taint,
        record why, let node-recover decide. Cheap (API reads): runs on every tick of a step's waits."""
        self.lock.renew()
        node = self._get_node()
        back = self._back(node, self.cluster.get_node_lease(self.o.node)) or self._rebooted(node)
        if back:
            self._interrupt(step, f"node {back} during the outage run")

    def _rebooted(self, node: dict) -> str:
        """Why the node counts as booted again since the taint ('' when it does not): a bootID other than the recorded one."""
        recorded = ((self.record or {}).get("identity") or {}).get("boot_id")
        now = identity_of(node).get("boot_id")
        if recorded and now and now != recorded:
            return f"booted again (bootID {recorded} -> {now})"
        return ""

    def _interrupt(self, step: str, reason: str) -> None:
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
    def _reprove_resume(self, node: dict, step: str) -> None:
        """A resumed run acts on proofs of its own: the same Node object, not back, power still Off."""
        recorded_uid = self.record.get("node_uid")
        if recorded_uid and node["metadata"].get("uid") != recorded_uid:
            raise RefusedError(
                "node-replaced",
                f"node {self.o.node} has UID {node['metadata'].get('uid')}, incident {self.record['id']} was about UID "
                f"{recorded_uid}: the Node object was re-created, the record does not apply to it. Nothing was changed",
            )
        self._ensure_still_down(step)
        self.power_checks.require_off(step, "on resume")

    def _attachments(self) -> list:
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
