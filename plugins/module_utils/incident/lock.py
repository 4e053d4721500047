# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node lock: a coordination.k8s.io Lease named after the node, held by a job id, with a TTL.

A job that crashed leaves a Lease that expires after the TTL; the same job id may take it over at once,
so a rerun of the same job resumes without waiting. Writes carry the resourceVersion they read, so two
jobs racing for an expired lock cannot both win.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import LockHeldError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time, parse_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError

LOCK_PREFIX = "nodeguard-failover-"


def lock_name(node: str) -> str:
    return LOCK_PREFIX + node


def holder_state(lease, job_id: str, now: float) -> tuple:
    """('free'|'ours'|'expired'|'held', holder, seconds left). Pure, for check mode and tests."""
    if lease is None:
        return "free", None, 0
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity")
    renewed = parse_time(spec.get("renewTime") or spec.get("acquireTime"))
    ttl = spec.get("leaseDurationSeconds") or 0
    left = (renewed + ttl - now) if renewed is not None else 0
    if not holder:
        return "free", None, 0
    if holder == job_id:
        return "ours", holder, left
    if left <= 0:
        return "expired", holder, left
    return "held", holder, left


class NodeLock:
    def __init__(self, cluster, namespace: str, node: str, job_id: str, ttl_seconds: int, clock):
        self.cluster = cluster
        self.namespace = namespace
        self.name = lock_name(node)
        self.node = node
        self.job_id = job_id
        self.ttl = int(ttl_seconds)
        self.clock = clock
        self.lease = None
        self._last_renew = 0.0

    def peek(self) -> tuple:
        """Read-only: who holds the lock now (check mode)."""
        return holder_state(self.cluster.get_lease(self.namespace, self.name), self.job_id, self.clock.now())

    def _body(self, now: float, acquired) -> dict:
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": "nodeguard.failover"},
                "annotations": {"failover.nodeguard.io/node": self.node},
            },
            "spec": {
                "holderIdentity": self.job_id,
                "leaseDurationSeconds": self.ttl,
                "acquireTime": acquired or format_micro_time(now),
                "renewTime": format_micro_time(now),
            },
        }

    def acquire(self) -> None:
        now = self.clock.now()
        lease = self.cluster.get_lease(self.namespace, self.name)
        state, holder, left = holder_state(lease, self.job_id, now)
        if state == "held":
            raise LockHeldError(f"node {self.node} is locked by job {holder!r} for {left:.0f}s more (Lease {self.namespace}/{self.name}); nothing was changed")
        try:
            if lease is None:
                self.lease = self.cluster.create_lease(self.namespace, self._body(now, None))
            else:
                body = self._body(now, (lease["spec"].get("acquireTime") if state == "ours" else None))
                body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
                self.lease = self.cluster.replace_lease(self.namespace, body)
        except ConflictError as e:
            raise LockHeldError(f"another job took the lock on {self.node} at the same moment; nothing was changed") from e
        self._last_renew = now

    def renew(self, force: bool = False) -> None:
        """Extend the TTL; cheap to call often (writes at most every TTL/3)."""
        if self.lease is None:
            return
        now = self.clock.now()
        if not force and now - self._last_renew < self.ttl / 3.0:
            return
        body = self._body(now, self.lease["spec"].get("acquireTime"))
        body["metadata"]["resourceVersion"] = self.lease["metadata"]["resourceVersion"]
        try:
            self.lease = self.cluster.replace_lease(self.namespace, body)
        except ConflictError as e:
            raise LockHeldError(f"lost the lock on {self.node}: the Lease was changed by someone else") from e
        self._last_renew = now

    def release(self) -> None:
        if self.lease is None:
            return
        self.cluster.delete_lease(self.namespace, self.name, self.lease["metadata"]["resourceVersion"])
        self.lease = None


def default_job_id() -> str:
    """user@host: stable across reruns from the same place, so a rerun after a crash takes its lock back."""
    import getpass
    import socket

    return f"{getpass.getuser()}@{socket.gethostname()}"
