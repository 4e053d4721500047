# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node lock: a coordination.k8s.io Lease named after the node, held by exactly one run.

Identity. Every run holds the lock under an identity of its own: the job label (the user's ``job_id``,
by default user@host), the host, the process id and a random token. Two runs never share it, so no run
takes a live lock back because it has the same name. After ``kill -9`` of ansible-playbook the module
goes on (ansible-core's worker called setsid); a rerun meets its lock, still renewed, and keeps away.

Expiry is observed, never computed from two clocks (as client-go leader election does). A run that meets
a lock held by another remembers the Lease as it read it and the local monotonic time at which it last saw
it change. The lock counts as expired only once it has not changed for the holder's leaseDurationSeconds of
that local time. The holder's renewTime is shown to people, never compared with the local clock: a
controller whose clock is fast or slow cannot steal a live lock. So a run only takes over a lock while
it waits (``wait_seconds``) and watches it long enough.

Holding. Every write is conditional on the resourceVersion last read or written. A run renews at least every
third of the duration while it waits, and confirms (a conditional renew) right before each destructive step
and each record write, so a run that lost the lock stops before it acts. Once a renew succeeded at time t,
nobody can take over before t + duration (they must watch the new version unchanged that long).

Release never raises: releasing a lock that is no longer ours is not an error, and a failed release is kept
in ``release_note`` for the module to report next to the run's own outcome, never instead of it.

The cluster lock (ClusterLock, the Lease CLUSTER_LOCK_NAME) works the same way. A run holds it only from the
read its cluster-wide rules (storm, quorum, one control-plane node at a time) are decided on until its taint
is written, so two runs on two nodes never decide on the same view and both taint.
"""

from __future__ import annotations

import json
import os
import socket
import uuid

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import LockHeldError, LockLostError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError

LOCK_PREFIX = "nodeguard-failover-"
CLUSTER_LOCK_NAME = "nodeguard-cluster"
HOLDER_ANNOTATION = "failover.nodeguard.io/holder"
POLL_SECONDS = 2.0
MAX_LABEL = 120


def lock_name(node: str) -> str:
    return LOCK_PREFIX + node


def default_job_id() -> str:
    """user@host of the controller: a label for people. The lock identity adds process id and a random token."""
    import getpass

    return f"{getpass.getuser()}@{socket.gethostname()}"


def run_holder(job: str) -> dict:
    """Who this run is: job label, host, pid and a token no other run has."""
    label = " ".join(str(job).split())[:MAX_LABEL]  # one line, bounded: it is shown in messages
    return {"job": label, "host": socket.gethostname(), "pid": os.getpid(), "run": uuid.uuid4().hex[:12]}


def holder_identity(holder: dict) -> str:
    return f"{holder['job']} ({holder['host']} pid {holder['pid']} run {holder['run']})"


def describe(lease) -> str:
    """The holder of a Lease, for messages: job, host, pid, and renewTime by the holder's own clock."""
    if not lease:
        return "nobody"
    spec = lease.get("spec") or {}
    text = ((lease.get("metadata") or {}).get("annotations") or {}).get(HOLDER_ANNOTATION)
    try:
        holder = json.loads(text) if text else None
    except ValueError:
        holder = None
    if isinstance(holder, dict) and holder.get("job"):
        who = f"job {holder.get('job')!r} on host {holder.get('host')} (pid {holder.get('pid')}, run {holder.get('run')})"
    else:  # a Lease written by hand or by an older version: its holderIdentity is all there is
        who = f"job {spec.get('holderIdentity')!r}"
    return f"{who}, renewTime {spec.get('renewTime') or spec.get('acquireTime') or 'none'} by its own clock"


class NodeLock:
    def __init__(self, cluster, namespace: str, node: str, job_id: str, ttl_seconds: int, clock, wait_seconds: int = 0):
        self.cluster = cluster
        self.namespace = namespace
        self.name = self._lease_name(node)
        self.node = node
        self.holder = run_holder(job_id)
        self.identity = holder_identity(self.holder)
        self.ttl = int(ttl_seconds)
        self.wait_seconds = max(0, int(wait_seconds or 0))
        self.clock = clock
        self.lease = None  # our Lease, as last written, while we hold it
        self.taken = False  # this run took the Lease at some point (check mode never does)
        self._renewed = 0.0  # monotonic time of our last successful write
        self._seen = None  # another holder's Lease: (what we saw, monotonic time it last changed, first seen)
        self.took_over = None
        self.release_note = None

    @staticmethod
    def _lease_name(node: str) -> str:
        return lock_name(node)

    # -- watching another holder ----------------------------------------------------------------
    def _observe(self, lease) -> tuple:
        """('free'|'ours'|'held'|'expired', seconds since it last changed as seen from here, seconds watched)."""
        now = self.clock.monotonic()
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
        if not holder or holder == self.identity:  # no holder, or this very run (its release failed)
            self._seen = None
            return ("ours" if holder else "free"), 0.0, 0.0
        visible = json.dumps([lease["metadata"].get("resourceVersion"), lease.get("spec")], sort_keys=True)
        if self._seen is None:
            self._seen = (visible, now, now)
        elif self._seen[0] != visible:
            self._seen = (visible, now, self._seen[2])
        unchanged, watched = now - self._seen[1], now - self._seen[2]
        duration = (lease.get("spec") or {}).get("leaseDurationSeconds") or self.ttl
        return ("expired" if unchanged >= duration else "held"), unchanged, watched

    def _held_message(self, lease, unchanged: float, watched: float) -> str:
        duration = (lease.get("spec") or {}).get("leaseDurationSeconds") or self.ttl
        if watched > unchanged:
            seen = f"seen renewing {unchanged:.0f}s ago while watched for {watched:.0f}s"
        else:
            seen = f"not seen changing while watched for {watched:.0f}s"
        return (
            f"node {self.node} is locked by {describe(lease)}; {seen} (lock_wait_seconds {self.wait_seconds}). "
            f"A live holder keeps renewing and keeps the node. If that run is gone, rerun with lock_wait_seconds of "
            f"at least {duration + 2 * POLL_SECONDS:.0f}: the lock is taken over once its Lease {self.namespace}/{self.name} "
            f"has not changed for {duration}s as seen from here. Nothing was changed"
        )

    def check_free(self) -> None:
        """Read-only (check mode): refuse when another run holds the lock. Never waits, never writes."""
        lease = self.cluster.get_lease(self.namespace, self.name)
        state, unchanged, watched = self._observe(lease)
        if state == "held":
            raise LockHeldError(self._held_message(lease, unchanged, watched))

    # -- holding ----------------------------------------------------------------------------------
    def _body(self, now: float, acquired, transitions: int) -> dict:
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": "nodeguard.failover"},
                "annotations": {
                    "failover.nodeguard.io/node": self.node,
                    HOLDER_ANNOTATION: json.dumps(self.holder, sort_keys=True),
                },
            },
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.ttl,
                "acquireTime": acquired or format_micro_time(now),
                "renewTime": format_micro_time(now),
                "leaseTransitions": transitions,
            },
        }

    def acquire(self) -> None:
        """Take the lock: free at once; held by another run only after observing it expire within wait_seconds."""
        deadline = self.clock.monotonic() + self.wait_seconds
        while True:
            lease = self.cluster.get_lease(self.namespace, self.name)
            state, unchanged, watched = self._observe(lease)
            if state != "held":
                try:
                    self._take(lease, state)
                    return
                except ConflictError:
                    continue  # another run wrote between our read and our write: look again
            left = deadline - self.clock.monotonic()
            if left <= 0:
                raise LockHeldError(self._held_message(lease, unchanged, watched))
            self.clock.sleep(min(POLL_SECONDS, left))

    def _take(self, lease, state: str) -> None:
        now = self.clock.now()
        if lease is None:
            self.lease = self.cluster.create_lease(self.namespace, self._body(now, None, 0))
        else:
            body = self._body(now, None, int((lease.get("spec") or {}).get("leaseTransitions") or 0) + 1)
            body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
            self.lease = self.cluster.replace_lease(self.namespace, body)
            if state == "expired":
                self.took_over = f"{describe(lease)}; not changed for {self.clock.monotonic() - self._seen[1]:.0f}s as seen from here"
        self.taken = True
        self._renewed = self.clock.monotonic()
        self._seen = None

    def renew(self, force: bool = False) -> None:
        """Extend the lock (a conditional write). Cheap to call often: writes at most every third of the TTL
        unless ``force``. Raises LockLostError when someone else changed the Lease: stop before acting."""
        if self.lease is None:
            return
        if not force and self.clock.monotonic() - self._renewed < self.ttl / 3.0:
            return
        spec = self.lease["spec"]
        body = self._body(self.clock.now(), spec.get("acquireTime"), spec.get("leaseTransitions") or 0)
        body["metadata"]["resourceVersion"] = self.lease["metadata"]["resourceVersion"]
        try:
            self.lease = self.cluster.replace_lease(self.namespace, body)
        except ConflictError as e:
            self.lease = None  # not ours any more: never write it again, not even to release it
            now_held = describe(self.cluster.get_lease(self.namespace, self.name))
            raise LockLostError(
                f"lost the lock {self.namespace}/{self.name} (run on {self.node}): it was changed by someone else "
                f"(now {now_held}); this run stopped before its next write"
            ) from e
        self._renewed = self.clock.monotonic()

    @property
    def held(self) -> bool:
        """This run holds the lock now (acquired, not released, not lost)."""
        return self.lease is not None

    def confirm(self) -> None:
        """Right before a destructive step or a record write: prove we still hold the lock (conditional renew)."""
        self.renew(force=True)

    def release(self) -> None:
        """Delete our Lease if it is still ours. Never raises: a problem goes to ``release_note``."""
        if self.lease is None:
            return
        lease, self.lease = self.lease, None
        try:
            self.cluster.delete_lease(self.namespace, self.name, lease["metadata"]["resourceVersion"])
        except ConflictError:
            self.release_note = f"the lock Lease {self.namespace}/{self.name} was no longer this run's at release (changed by someone else); left as it is"
        except Exception as e:  # noqa: BLE001 - a failed release must never replace the run's own outcome
            self.release_note = (
                f"could not release the lock Lease {self.namespace}/{self.name}: {e}. It holds the node until another run "
                f"has watched it unchanged for {self.ttl}s, or until it is deleted by hand"
            )

    def report(self) -> dict:
        """What the module returns about the lock: no holder when this run never took it (check mode, a refusal before it)."""
        return {
            "lease": f"{self.namespace}/{self.name}",
            "holder": self.identity if self.taken else None,
            "ttl_seconds": self.ttl,
            "took_over": self.took_over,
            "release_note": self.release_note,
        }


class ClusterLock(NodeLock):
    """The one cluster-wide lock (Lease CLUSTER_LOCK_NAME), held by the run on ``node`` only while it decides
    the cluster-wide rules and writes its taint. It waits for another run to release it, or to leave it
    unchanged for its duration (a run that died holding it), as the node lock does."""

    def __init__(self, cluster, namespace: str, node: str, job_id: str, ttl_seconds: int, clock):
        super().__init__(cluster, namespace, node, job_id, ttl_seconds, clock, wait_seconds=int(ttl_seconds) + 3 * POLL_SECONDS)

    @staticmethod
    def _lease_name(_node: str) -> str:
        return CLUSTER_LOCK_NAME

    def _held_message(self, lease, unchanged: float, watched: float) -> str:
        return (
            f"the cluster-wide rules (storm, quorum, one control-plane node at a time) are being decided by another run: "
            f"{describe(lease)}; watched {watched:.0f}s, last seen changing {unchanged:.0f}s ago. Its Lease "
            f"{self.namespace}/{self.name} is held only from that decision to its taint; retry. Nothing was changed"
        )
