# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Remove the out-of-service taint once the node is really back, and close the incident record.

The node is watched first (HealthWatch), on this controller's own monotonic clock: the run waits until it has seen
the node Ready for ``healthy_seconds`` and its Lease renewed, or until waiting cannot make that hold. The kubelet's
timestamps are never compared with this clock. Then the lock is taken and all must hold: out-of-band power reads
On; the node is Ready, as watched from here, for at least ``healthy_seconds``, with a Lease seen renewing; it
restarted (its bootID differs from the one recorded at the taint) on the same machine (same systemUUID); no pod of
the old incarnation is left on it; no VolumeAttachment still names it. The taint removal and the record's end are
one conditional write.

The facts the restart is proven against (bootID and systemUUID at the taint, the Node UID, when it was tainted)
are taken from the incident's copy in the history ConfigMap, which only the remediator may write: the Node
annotation can be rewritten by the node's own kubelet or by anyone who may patch nodes. A record on the Node
that has no history copy, or differs from it in those facts, is refused.

A node that reports in again (Ready, fresh Lease) with the bootID it had at the taint never went down: the
power-off proof of that incident was false. That is refused, recorded on the incident and sent as a Warning Event.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError, ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import attachments as vas
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history, timeline
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import pods as podrules
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.args import recover_default
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import NotRecoveredYetError, RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.events import Recorder
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import NodeLock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.node_list import RunNodeList
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import (
    has_out_of_service_taint,
    identity,
    is_ready,
    ready_condition,
    ready_since,
    taints_without_out_of_service,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import LeaseWatch, Proof, lease_renew_interval
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time, parse_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError, WriteUnknownError, patch_node_confirmed
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import wait_until
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import (
    ClusterUniqueIdentity,
    nodes_reporting,
    placeholder,
    read_with_identity,
    same_system_uuid,
)


@dataclass
class RecoverOptions:
    node: str
    job_id: str
    healthy_seconds: int = recover_default("healthy_seconds")
    lock_namespace: str = recover_default("lock_namespace")
    history_namespace: str = recover_default("history_namespace")
    lock_ttl_seconds: int = recover_default("lock_ttl_seconds")
    lock_wait_seconds: int = recover_default("lock_wait_seconds")
    event_namespace: str = recover_default("event_namespace")


# How often the health watch reads the Node and its Lease.
WATCH_INTERVAL_SECONDS = 2.0


def _ready_token(node: dict) -> str:
    """What the node's readiness looks like, as an opaque token: its Ready transition and bootID, never read as a time.
    Another token on a later read means the node was NotReady (or rebooted) in between."""
    transition = (ready_condition(node) or {}).get("lastTransitionTime")
    return f"{transition}/{identity(node)['boot_id']}"


class HealthWatch:
    """The node's health as this controller watches it, on its own monotonic clock (``ready`` and ``heartbeat``).

    "Ready for healthy_seconds" counts from the first read that saw the node Ready, and starts again at a read that
    shows it not Ready, or Ready with another transition or bootID (a flap between two reads). "Fresh Lease" is a
    change of the Lease seen by this run (proofs.LeaseWatch, node-outage's Lease watch). The kubelet's timestamps
    (lastTransitionTime, renewTime) are its clock: shown as tokens, never compared with this one."""

    def __init__(self, clock, healthy_seconds: float):
        self.clock = clock
        self.healthy_seconds = healthy_seconds
        self.lease_watch = LeaseWatch(clock, 0)
        self.ready = None  # (token, monotonic time of the first read that saw it) while Ready

    def observe(self, node: dict, lease) -> None:
        self.lease_watch.observe(lease)
        token = _ready_token(node) if is_ready(node) else None
        if token is None:
            self.ready = None
        elif self.ready is None or self.ready[0] != token:
            self.ready = (token, self.clock.monotonic())

    def proofs(self, node: dict, lease) -> list:
        """The ``ready`` and ``heartbeat`` Proofs after one more read (``node`` and ``lease`` as read now)."""
        self.observe(node, lease)
        if self.ready is None:
            ready = Proof("ready", False, "node is not Ready")
        else:
            ready_for = self.clock.monotonic() - self.ready[1]
            ready = Proof("ready", ready_for >= self.healthy_seconds, f"Ready for {ready_for:.0f}s as watched from here (need {self.healthy_seconds}s)")
        return [ready, self.lease_watch.renewal_proof(lease)]

    def settled(self, node: dict, lease) -> bool:
        """True when both proofs hold, or when waiting alone cannot make them (not Ready, no Lease or no duration)."""
        if all(p.ok for p in self.proofs(node, lease)):
            return True
        return self.ready is None or lease_renew_interval(lease) is None

    def longest_wait(self, lease) -> float:
        """How long a run watches at most: healthy_seconds, and one renew interval for the Lease change after it."""
        return self.healthy_seconds + (lease_renew_interval(lease) or 0) + WATCH_INTERVAL_SECONDS


def recovery_checks(health: list, pods: list, power_reading, power_error, since) -> list:
    """The four conditions, as Proofs (pure): power On, ``health`` (HealthWatch.proofs: ready, heartbeat), no old pod."""
    checks = []
    if power_error is not None:
        checks.append(Proof("power-on", False, f"out-of-band power not proven: {power_error}"))
    else:
        checks.append(Proof("power-on", power_reading.state == "on", f"{power_reading.method} reads {power_reading.state.upper()}"))
    checks += health
    old = podrules.old_incarnation(pods, since) if since else []
    checks.append(
        Proof(
            "old-pods-gone",
            not old,
            "none left" if not old else "still bound: " + ", ".join(f"{p['namespace']}/{p['name']}" for p in old),
        )
    )
    return checks


def same_machine_check(recorded_uuid: str, node: dict, nodes: list) -> Proof:
    """The node runs on the machine it ran on at the taint: its systemUUID is the recorded one, is no firmware
    placeholder, and no other Node of ``nodes`` (the cluster's Node list) reports it (power/identity.py)."""
    now = identity(node)["system_uuid"]
    if not recorded_uuid or not now:
        return Proof("same-machine", False, "no systemUUID recorded at the taint or reported now: the machine cannot be compared")
    unset = placeholder(now) or placeholder(recorded_uuid)
    if unset:
        return Proof("same-machine", False, f"systemUUID {now} ({unset}) is a placeholder, not an identity: the machine cannot be compared")
    if same_system_uuid(now, recorded_uuid) != "exact":
        return Proof("same-machine", False, f"systemUUID {now} is not {recorded_uuid} recorded at the taint: another machine")
    holders = nodes_reporting(now, nodes)
    if holders != [node["metadata"]["name"]]:
        return Proof(
            "same-machine",
            False,
            f"systemUUID {now} is reported by Nodes {', '.join(holders)}: a UUID shared by several machines names none of them",
        )
    return Proof("same-machine", True, f"systemUUID {now} as at the taint, and no other Node reports it")


def restart_checks(record: dict, node: dict, attachments: list, nodes: list) -> list:
    """The node restarted, on the same machine, and nothing is attached to it any more (pure).

    ``record["identity"]`` is what the node reported when it was tainted (record.set_identity); ``nodes`` is the
    cluster's Node list (a systemUUID proves the machine only when one Node reports it)."""
    before = record.get("identity") or {}
    now = identity(node)
    if not before.get("boot_id"):
        restarted = Proof("restarted", False, "no bootID was recorded at the taint (taint adopted or placed by an older version): a restart cannot be shown")
    elif not now["boot_id"]:
        restarted = Proof("restarted", False, "the node reports no status.nodeInfo.bootID")
    elif now["boot_id"] == before["boot_id"]:
        restarted = Proof("restarted", False, f"bootID {now['boot_id']} is the one recorded at the taint: the node did not restart")
    else:
        restarted = Proof("restarted", True, f"bootID changed since the taint ({before['boot_id']} -> {now['boot_id']})")
    machine = same_machine_check(before.get("system_uuid"), node, nodes)
    released = Proof(
        "volumes-released",
        not attachments,
        "no VolumeAttachment names the node" if not attachments else "still attached: " + ", ".join(a["metadata"]["name"] for a in attachments),
    )
    return [restarted, machine, released]


def power_off_proof_was_false(record: dict, node: dict, checks: list) -> bool:
    """The node reports in (Ready, fresh Lease) with the bootID recorded at the taint: it never went down."""
    boot_id = (record.get("identity") or {}).get("boot_id")
    by_name = {c.name: c for c in checks}
    alive = is_ready(node) and by_name["heartbeat"].ok
    return bool(boot_id) and alive and identity(node)["boot_id"] == boot_id


def trusted_copy(record: dict, kept: list, namespace: str) -> dict:
    """The history copy (``kept``: history.read of the node) of the Node's ``record``; raises RefusedError when there
    is none or when the Node's record differs from it in history.TRUSTED_FIELDS or its taint time (pure)."""
    where = f"ConfigMap {namespace}/{history.config_map_name(record['node'])}"
    copy, differs = history.compare(record, kept)
    if copy is None:
        raise RefusedError(
            "record-untrusted",
            f"incident {record['id']} on node {record['node']} has no copy in its history ({where}), which only the remediator "
            "can write; the Node annotation alone can be rewritten by the node's kubelet or anyone who may patch nodes, so it "
            "proves no restart. The taint stays and nothing was changed; check the incident, then remove the taint by hand "
            "(docs/runbooks/node-recover.md)",
        )
    if differs:
        raise RefusedError(
            "record-untrusted",
            f"the incident record on node {record['node']} differs from its history copy ({where}) in {', '.join(differs)}: "
            "someone rewrote the Node annotation. The taint stays and nothing was changed; compare the two "
            "(nodeguard.failover.failover_history_info) before acting",
        )
    return copy


def _untainted(node: dict, record: dict) -> bool:
    """The untaint of ``record`` is on ``node``: no out-of-service taint, and that incident's record closed."""
    on_node = records.read(node) or {}
    return not has_out_of_service_taint(node) and on_node.get("id") == record["id"] and on_node.get("phase") == records.RECOVERED


class RecoverRun:
    def __init__(self, cluster, power, options: RecoverOptions, clock, check_mode: bool = False):
        self.cluster = cluster
        # The full Node list, read once per evaluation: the power reading's identity and the restart check share it
        # (node_list.py). A system UUID proves identity only when exactly one Node reports it (power/identity.py).
        self.node_list = RunNodeList(cluster)
        self.power = ClusterUniqueIdentity(power, self.node_list.latest)
        self.o = options
        self.clock = clock
        self.check_mode = check_mode
        self.recorder = None
        self.lock = NodeLock(
            cluster, options.lock_namespace, options.node, options.job_id, options.lock_ttl_seconds, clock, options.lock_wait_seconds
        )
        self.health = HealthWatch(clock, options.healthy_seconds)

    def _get_node(self) -> dict:
        node = self.cluster.get_node(self.o.node)
        if node is None:
            raise RefusedError("unknown-node", f"node {self.o.node!r} does not exist in the cluster; nothing was changed")
        return node

    def run(self) -> dict:
        node = self._get_node()
        if not has_out_of_service_taint(node):
            return self._result(node, records.read(node), [], False, "no out-of-service taint on the node; nothing to recover")
        self._watch_health(node)
        if self.check_mode:
            self.lock.check_free()
            record, adopted, checks = self._evaluate(node)
            self._refuse_if_missing(node, record, adopted, checks)
            return self._result(node, record, checks, False, "check mode: would remove the out-of-service taint")

        # The lock first: every check below is made while no other run can act on this node.
        self.lock.acquire()
        try:
            node = self._get_node()
            if not has_out_of_service_taint(node):
                return self._result(node, records.read(node), [], False, "no out-of-service taint on the node; nothing to recover")
            record, adopted, checks = self._evaluate(node)
            self._refuse_if_missing(node, record, adopted, checks)
            node = self._untaint(record)
        finally:
            self.lock.release()
        return self._result(node, record, checks, True, "taint removed, incident closed")

    @property
    def changed(self) -> bool:
        return bool(self.recorder and self.recorder.written)

    def _recorder(self, node: dict, guard=None) -> Recorder:
        return Recorder(self.cluster, node, self.o.event_namespace, self.clock, history_namespace=self.o.history_namespace, guard=guard)

    def _watch_health(self, node: dict) -> None:
        """Watch the node (read only, before the lock) until it has been seen Ready for healthy_seconds with its Lease
        renewing, or until waiting cannot make that hold: at once when it is not Ready, at most HealthWatch.longest_wait."""
        lease = self.cluster.get_node_lease(self.o.node)
        if self.health.settled(node, lease):
            return

        def settled() -> bool:
            return self.health.settled(self._get_node(), self.cluster.get_node_lease(self.o.node))

        wait_until(settled, self.health.longest_wait(lease), WATCH_INTERVAL_SECONDS, self.clock)

    def _evaluate(self, node: dict) -> tuple:
        """(record, adopted, checks) for the node as read now. Raises while an outage run is unfinished."""
        record = records.read(node)
        if record is not None and record.get("phase") in records.OUTAGE_STEPS:
            if self.lock.held:  # this run holds the node's lock, so no outage run is under way: it stopped
                error = ((record.get("steps") or {}).get(record["phase"]) or {}).get("error")
                why = f"it stopped on the error: {error}" if error else "it crashed or was killed"
                raise RefusedError(
                    "outage-stopped",
                    f"the outage run on {self.o.node} stopped at step {record['phase']} (job {record.get('job')}) and no run holds "
                    f"the node's lock: {why}. "
                    "Rerun node-outage: it resumes, or stops cleanly if the node is back. Nothing was changed",
                )
            raise RefusedError(
                "outage-running",
                f"the outage run on {self.o.node} is at step {record['phase']} (job {record.get('job')}), running or "
                "crashed; rerun node-outage first: it resumes, or stops cleanly if the node is back. Nothing was changed",
            )
        adopted = record is None or record.get("phase") == records.RECOVERED
        if adopted:
            record = records.new(node, self.o.job_id, self.clock.now(), None)
            record["identity"] = {}  # nothing was recorded at the taint: a restart cannot be shown
            record["adopted"] = "taint found without a nodeguard record"
        else:
            trusted_copy(record, history.read(self.cluster, self.o.history_namespace, self.o.node), self.o.history_namespace)
        now = self.clock.now()
        self.node_list.read()  # this evaluation's Node list: the identity below and restart_checks read it
        # Without a record every pod bound to the tainted node that does not tolerate the taint is from before it.
        tainted = parse_time(((record.get("steps") or {}).get("taint") or {}).get("end"))
        since = now if adopted else (tainted or parse_time(record.get("first_not_ready")) or now)
        try:
            # Power counts only from a device shown to be this node's (power/identity.py).
            reading, verdict = read_with_identity(self.power, node, record.get("id"))
            error = None if verdict.ok else PowerError(f"the power device is not shown to belong to this node: {verdict.detail}")
        except PowerError as e:
            reading, error = None, e
        checks = recovery_checks(
            self.health.proofs(node, self.cluster.get_node_lease(self.o.node)),
            self.cluster.list_pods_on_node(self.o.node),
            reading,
            error,
            since,
        )
        checks += restart_checks(record, node, vas.on_node(self.cluster.list_volume_attachments(), self.o.node), self.node_list.latest())
        return record, adopted, checks

    def _refuse_if_missing(self, node: dict, record: dict, adopted: bool, checks: list) -> None:
        missing = [c for c in checks if not c.ok]
        if not missing:
            return
        detail = "; ".join(f"{c.name}: {c.detail}" for c in missing)
        if not adopted and power_off_proof_was_false(record, node, checks):
            message = (
                f"{self.o.node} reports in with the bootID it had when incident {record['id']} tainted it: it never went down, "
                "so that incident's power-off proof was false (check the power mapping and its identity). The taint stays"
            )
            if not self.check_mode:
                record["power_off_proof_false"] = {"at": format_time(self.clock.now()), "boot_id": identity(node)["boot_id"], "detail": message}
                self.recorder = self._recorder(node, guard=self.lock.confirm)
                self.recorder.save(record)
                self.recorder.event("FailoverPowerOffProofFalse", message, warning=True)
                message += "; recorded on the incident and sent as a Warning Event"
            raise ProofError(f"{message}. Missing: {detail}")
        raise NotRecoveredYetError(
            f"{self.o.node} is not recovered yet, the taint stays and nothing was changed. Missing: {detail}. node-recover watches "
            f"the node itself: it removes the taint once this run has seen it Ready for {self.o.healthy_seconds}s and its Lease "
            "renewed, on its own clock (the kubelet's timestamps are not compared)"
        )

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
            try:  # an answer lost after the API took the write: the Node read back shows it (services.patch_node_confirmed)
                node = patch_node_confirmed(self.cluster, self.o.node, patch, lambda n: _untainted(n, record))
            except ConflictError:
                continue  # heartbeats change the Node: re-read and try again
            except WriteUnknownError as e:
                raise ClusterError(
                    f"{e}. The taint may or may not be removed: rerun node-recover, it closes incident {record['id']} if the "
                    "taint is still there and reports no taint if it is gone"
                ) from e
            self.recorder = self._recorder(node)
            self.recorder.written = True
            self.recorder.archive(record)
            self.recorder.event("FailoverRecovered", f"out-of-service taint removed (incident {record['id']})")
            return node
        raise RefusedError("busy-node", f"{self.o.node} kept changing while removing the taint; nothing was changed, retry")

    def _result(self, node: dict, record, checks: list, changed: bool, message: str) -> dict:
        rows = timeline.rows(record) if record else []
        errors = self.recorder.errors if self.recorder else []
        if errors:
            message = f"{message}; {len(errors)} best-effort write(s) failed: {'; '.join(errors)}"
        return {
            "changed": changed,
            "node": self.o.node,
            "message": message,
            "write_errors": errors,
            "tainted": has_out_of_service_taint(node),
            "checks": [c.as_dict() for c in checks],
            "record": record,
            "timeline": rows,
            "timeline_table": timeline.table(rows) if rows else "",
            "lock": self.lock.report(),
        }
