# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-rulebook event filter: one Alertmanager webhook POST -> one event per node alert.

Alertmanager sends every alert of a group in one POST (``payload.alerts``). The rulebook decides
per node, so this filter splits the POST and adds what a per-node rule cannot see by itself:
how many nodes are down right now (the storm guard).

The count is kept across POSTs, because Alertmanager may route each node's alert in its own group:
a node counts as down from its first ``firing`` alert until its ``resolved`` alert, or until
``firing_ttl_seconds`` pass without Alertmanager repeating it (set that above the route's
``repeat_interval``). A lost ``resolved`` notification therefore over-counts, which errs towards
"storm, do nothing".
"""

from __future__ import annotations

import time
from typing import Any

DOCUMENTATION = r"""
---
short_description: Split an Alertmanager webhook payload into one event per node alert, with the count of nodes down.
description:
  - Input is the event of the eda.builtin.webhook source receiving an Alertmanager webhook (payload.alerts).
  - Output is one event per alert that carries the node label, with keys node, status (firing or resolved),
    alertname, fingerprint, starts_at, nodes_down (number of nodes with a firing node-down alert, across posts),
    down_nodes (their names) and alert (the original alert).
  - Events that are not Alertmanager payloads pass through unchanged; alerts without the node label are dropped.
options:
  node_label:
    description: Alert label that names the Kubernetes node.
    type: str
    default: node
  node_down_alerts:
    description: Alert names that mean "this node is down"; only these count towards nodes_down.
    type: list
    default: [NodeguardNodeDown]
  firing_ttl_seconds:
    description: Forget a firing node after this long without a repeat; keep it above Alertmanager's repeat_interval.
    type: int
    default: 18000
"""

EXAMPLES = r"""
- eda.builtin.webhook:
    host: 127.0.0.1
    port: 5000
  filters:
    - nodeguard.failover.alertmanager_nodes:
        node_down_alerts: [NodeguardNodeDown]
"""

# node name -> monotonic time of its latest firing node-down alert. One rulebook process, one view.
_down_since_seen: dict[str, float] = {}


def _track(alerts: list[dict[str, Any]], node_label: str, node_down_alerts: list[str], ttl: float) -> None:
    now = time.monotonic()
    for alert in alerts:
        labels = alert.get("labels") or {}
        node = labels.get(node_label)
        if not node or labels.get("alertname") not in node_down_alerts:
            continue
        if alert.get("status") == "firing":
            _down_since_seen[node] = now
        else:
            _down_since_seen.pop(node, None)
    for node, seen in list(_down_since_seen.items()):
        if now - seen > ttl:
            del _down_since_seen[node]


def main(
    event: dict[str, Any],
    node_label: str = "node",
    node_down_alerts: list[str] | None = None,
    firing_ttl_seconds: int = 18000,
) -> list[dict[str, Any]]:
    """Return one event per node alert of an Alertmanager payload (the event itself otherwise)."""
    payload = event.get("payload")
    alerts = payload.get("alerts") if isinstance(payload, dict) else None
    if not isinstance(alerts, list):
        return [event]

    # The whole POST is counted before any of its alerts is emitted, so every alert of a
    # storm that arrives in one POST sees the full count.
    _track(alerts, node_label, list(node_down_alerts or ["NodeguardNodeDown"]), float(firing_ttl_seconds))
    down_nodes = sorted(_down_since_seen)

    events = []
    for alert in alerts:
        labels = alert.get("labels") or {}
        node = labels.get(node_label)
        if not node:
            continue
        events.append(
            {
                "node": node,
                "status": alert.get("status", "firing"),
                "alertname": labels.get("alertname", ""),
                "fingerprint": alert.get("fingerprint", ""),
                "starts_at": alert.get("startsAt", ""),
                "nodes_down": len(down_nodes),
                "down_nodes": down_nodes,
                "alert": alert,
                "meta": event.get("meta", {}),
            }
        )
    return events
