# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Incident record writer: the Node annotation and a core/v1 Event about the Node, for every step edge."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time

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


class Recorder:
    """Writes the record annotation and Events. ``written`` tells the module whether anything changed."""

    def __init__(self, cluster, node: dict, event_namespace: str, clock, guard=None):
        self.cluster = cluster
        self.guard = guard  # runs before every record write, e.g. to confirm the lock
        self.node = node
        self.event_namespace = event_namespace
        self.clock = clock
        self.events = []
        self.written = False

    def save(self, record: dict) -> None:
        if self.guard is not None:
            self.guard()
        self.cluster.patch_node(self.node["metadata"]["name"], records.annotations_patch(record))
        self.written = True

    def event(self, reason: str, message: str, warning: bool = False) -> None:
        self.cluster.create_event(self.event_namespace, event_body(self.node, reason, message, self.clock.now(), warning))
        self.events.append({"reason": reason, "message": message})
        self.written = True

    def step_started(self, record: dict, step: str) -> None:
        records.start_step(record, step, self.clock.now())
        self.save(record)
        self.event("FailoverStepStarted", f"{step} started (incident {record['id']}, job {record['job']})")

    def step_ended(self, record: dict, step: str, outcome: str = "done") -> None:
        records.end_step(record, step, self.clock.now(), outcome)
        self.save(record)
        self.event("FailoverStepCompleted", f"{step} {outcome} (incident {record['id']}, job {record['job']})")
