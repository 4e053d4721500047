# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Incident record writer: the Node annotation and a core/v1 Event about the Node, for every step edge.

Record writes are conditional: each carries the Node's resourceVersion from the last read or write, and
on a conflict the record on the Node must still be exactly the one this run wrote last (a heartbeat or a
label change is retried; another writer's record stops the run). Each saved record is also copied into
the node's durable history (incident/history.py). Events and the history copy are best effort: the taint
and the record are the truth, so their failures are reported, never allowed to hide that the cluster changed.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError

COMPONENT = "nodeguard-failover"


def event_body(node: dict, reason: str, message: str, now: float, warning: bool = False) -> dict:
    meta = node["metadata"]
    stamp = format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.nodeguard-"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta.get("uid")},
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def _annotation(node: dict):
    return ((node.get("metadata") or {}).get("annotations") or {}).get(records.ANNOTATION)


class Recorder:
    """Writes the record annotation, its history copy and Events.

    ``written`` tells the module whether anything changed; ``errors`` lists the best-effort writes
    (Events, history) that failed. ``guard`` (optional) runs before every record write, e.g. to renew the lock.
    ``history_namespace`` None turns the history copy off. A save with ``archive=False`` leaves its history
    copy to the next save that archives, or to ``flush_history``: several record writes in a row, one history write.
    """

    def __init__(self, cluster, node: dict, event_namespace: str, clock, history_namespace=None, guard=None):
        self.cluster = cluster
        self.node = node
        self.event_namespace = event_namespace
        self.clock = clock
        self.history_namespace = history_namespace
        self.guard = guard
        self.events = []
        self.errors = []
        self.written = False
        self.unarchived = None  # the last record saved without its history copy (None: the history is up to date)

    def save(self, record: dict, archive: bool = True) -> None:
        """Write the record to the Node, conditional on the Node's resourceVersion (see the module docstring)."""
        if self.guard is not None:
            self.guard()
        name = self.node["metadata"]["name"]
        ours = _annotation(self.node)
        for _attempt in range(5):
            patch = records.annotations_patch(record)
            patch["metadata"]["resourceVersion"] = self.node["metadata"]["resourceVersion"]
            try:
                self.node = self.cluster.patch_node(name, patch)
                break
            except ConflictError:
                current = self.cluster.get_node(name)
                if current is None or current["metadata"].get("uid") != self.node["metadata"].get("uid"):
                    raise RefusedError("record-changed", f"node {name} was deleted or re-created; incident {record['id']} was not updated") from None
                if _annotation(current) != ours:
                    theirs = (records.read(current) or {}).get("job")
                    raise RefusedError(
                        "record-changed",
                        f"the incident record on {name} was changed by someone else (job {theirs!r}) since this run wrote it; "
                        f"stopped without overwriting it (incident {record['id']})",
                    ) from None
                self.node = current  # only other fields changed (status, labels): write again on the new version
        else:
            raise RefusedError("busy-node", f"{name} kept changing while recording incident {record['id']}; rerun to continue")
        self.written = True
        if archive:
            self.archive(record)
        else:
            self.unarchived = record

    def flush_history(self) -> None:
        """Write the history copy a save left for later, if any."""
        if self.unarchived is not None:
            self.archive(self.unarchived)

    def archive(self, record: dict) -> None:
        """Copy the record into the node's durable history (best effort after the taint)."""
        self.unarchived = None
        if self.history_namespace is None:
            return
        try:
            history.upsert(self.cluster, self.history_namespace, record)
        except NodeguardError as e:
            self.errors.append(f"history of incident {record['id']} not updated: {e}")

    def event(self, reason: str, message: str, warning: bool = False) -> None:
        """Create an Event about the Node; a failure is kept in ``errors`` and never raised."""
        try:
            self.cluster.create_event(self.event_namespace, event_body(self.node, reason, message, self.clock.now(), warning))
        except NodeguardError as e:
            self.errors.append(f"Event {reason} not written: {e}")
            return
        self.events.append({"reason": reason, "message": message})
        self.written = True

    def step_started(self, record: dict, step: str, archive: bool = True) -> None:
        records.start_step(record, step, self.clock.now())
        self.save(record, archive)
        self.event("FailoverStepStarted", f"{step} started (incident {record['id']}, job {record['job']})")

    def step_ended(self, record: dict, step: str, outcome: str = "done", archive: bool = True) -> None:
        records.end_step(record, step, self.clock.now(), outcome)
        self.save(record, archive)
        self.event("FailoverStepCompleted", f"{step} {outcome} (incident {record['id']}, job {record['job']})")
