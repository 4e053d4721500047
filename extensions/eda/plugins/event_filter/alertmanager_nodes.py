# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-rulebook event filter: one Alertmanager webhook POST -> one checked event per node alert.

Alertmanager sends every alert of a group in one POST (``payload.alerts``). The rulebook decides
per node, so this filter splits the POST and adds what a per-node rule cannot see by itself:
how many nodes are down right now (the storm guard).

Nothing an alert carries reaches a playbook unchecked. The rulebook copies event fields into the
playbook's extra vars, and Ansible evaluates extra vars as templates, so an alert whose node label
is ``{{ lookup('pipe', 'id') }}`` would run a command. Every field this filter emits is checked:
the node is a Kubernetes node name (DNS-1123 subdomain), the fingerprint is hex, the status is
firing or resolved, the alert name and start time have their Alertmanager form. An alert that fails
a check becomes a refusal event ``{"nodeguard_refused": "<why, with the value escaped>"}``, which
the rulebook only logs. The original alert and the request headers are not passed on.

The count is kept across POSTs, because Alertmanager may route each node's alert in its own group:
a node counts as down from its first ``firing`` alert until its ``resolved`` alert, or until
``firing_ttl_seconds`` pass without Alertmanager repeating it (set that above the route's
``repeat_interval``). A lost ``resolved`` notification therefore over-counts, which errs towards
"storm, do nothing".
"""

from __future__ import annotations

import importlib.util
import re
import time
from pathlib import Path
from typing import Any

DOCUMENTATION = r"""
---
short_description: Split an Alertmanager webhook payload into one checked event per node alert, with the count of nodes down.
description:
  - Input is the event of the eda.builtin.webhook source receiving an Alertmanager webhook (payload.alerts).
  - Output is one event per alert that carries the node label, with keys node, status (firing or resolved),
    alertname, fingerprint, starts_at, nodes_down (number of nodes with a firing node-down alert, across posts),
    down_nodes (their names). The original alert and the webhook's meta (request headers) are not passed on.
  - Every value is checked; node must be a Kubernetes node name (DNS-1123 subdomain, at most 253 characters),
    fingerprint hexadecimal, status firing or resolved, alertname a Prometheus name, starts_at an RFC 3339 time.
    An alert that fails a check becomes one event with the single key nodeguard_refused (the reason, with the
    offending value escaped) and is not counted. The rulebook logs it and runs nothing.
  - An event that is not an Alertmanager payload becomes a refusal event too. Alerts without the node label are dropped.
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


def _load_names():
    """The collection's one rule for Kubernetes names (plugins/module_utils/k8s/names.py). ansible-rulebook runs
    this file by path, outside Ansible's collection loader, so the rule is loaded by path too."""
    path = Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / "k8s" / "names.py"
    spec = importlib.util.spec_from_file_location("nodeguard_k8s_names", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_names = _load_names()

FINGERPRINT = re.compile(r"[0-9a-f]{1,64}")
ALERTNAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]{0,199}")
RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})")
STATUSES = ("firing", "resolved")

# node name -> monotonic time of its latest firing node-down alert. One rulebook process, one view.
_down_since_seen: dict[str, float] = {}


def refusal(reason: str) -> dict[str, Any]:
    """The event for an alert that is not acted on; ``reason`` must already be inert (values through _names.shown)."""
    return {"nodeguard_refused": reason}


def _checked(alert: Any, node_label: str) -> tuple[dict[str, str] | None, str]:
    """(fields, "") for an alert whose every field has its expected form, (None, why) otherwise.
    (None, "") for an alert without the node label (not about a node: dropped)."""
    if not isinstance(alert, dict) or not isinstance(alert.get("labels") or {}, dict):
        return None, "an alert that is not an object"
    labels = alert.get("labels") or {}
    node = labels.get(node_label)
    if node is None or node == "":
        return None, ""
    why = _names.why_not_node_name(node)
    if why:
        return None, f"label {node_label}: {why}"
    fields = {
        "node": node,
        "status": alert.get("status", "firing"),
        "alertname": labels.get("alertname", ""),
        "fingerprint": alert.get("fingerprint", ""),
        "starts_at": alert.get("startsAt", ""),
    }
    checks = (
        ("status", STATUSES.__contains__, "firing or resolved"),
        ("alertname", ALERTNAME.fullmatch, "a Prometheus alert name"),
        ("fingerprint", FINGERPRINT.fullmatch, "hexadecimal, as Alertmanager makes it"),
        ("starts_at", RFC3339.fullmatch, "an RFC 3339 time"),
    )
    for key, ok, expected in checks:
        value = fields[key]
        if not isinstance(value, str) or not ok(value):
            return None, f"{key} {_names.shown(value)} of node {node} is not {expected}"
    return fields, ""


def _track(alerts: list[dict[str, str]], node_down_alerts: list[str], ttl: float) -> None:
    now = time.monotonic()
    for alert in alerts:
        if alert["alertname"] not in node_down_alerts:
            continue
        if alert["status"] == "firing":
            _down_since_seen[alert["node"]] = now
        else:
            _down_since_seen.pop(alert["node"], None)
    for node, seen in list(_down_since_seen.items()):
        if now - seen > ttl:
            del _down_since_seen[node]


def main(
    event: dict[str, Any],
    node_label: str = "node",
    node_down_alerts: list[str] | None = None,
    firing_ttl_seconds: int = 18000,
) -> list[dict[str, Any]]:
    """Return one checked event per node alert of an Alertmanager payload, or refusal events."""
    payload = event.get("payload")
    alerts = payload.get("alerts") if isinstance(payload, dict) else None
    if not isinstance(alerts, list):
        return [refusal("not an Alertmanager webhook payload (no alerts list); ignored")]

    good, refused = [], []
    for alert in alerts:
        fields, why = _checked(alert, node_label)
        if fields is not None:
            good.append(fields)
        elif why:
            refused.append(refusal(f"alert refused, nothing runs for it: {why}"))

    # The whole POST is counted before any of its alerts is emitted, so every alert of a
    # storm that arrives in one POST sees the full count.
    _track(good, list(node_down_alerts or ["NodeguardNodeDown"]), float(firing_ttl_seconds))
    down_nodes = sorted(_down_since_seen)
    # No meta: the webhook's (request headers) is not passed on; ansible-rulebook adds its own after this filter.
    events = [dict(fields, nodes_down=len(down_nodes), down_nodes=down_nodes) for fields in good]
    return refused + events
