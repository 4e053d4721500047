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
a node counts as down from its first ``firing`` node-down alert until its ``resolved`` alert, or until
``firing_ttl_seconds`` pass without Alertmanager repeating it (set that above the route's
``repeat_interval``). A lost ``resolved`` notification therefore over-counts, which errs towards
"storm, do nothing". Alerts that Alertmanager left out of a POST (``truncatedAlerts``, the receiver's
``max_alerts``) count as nodes down too: they are alerts of the same group, whose nodes cannot be seen.

Node-down alerts (``node_down_alerts``) are the collection's NodeguardNodeDown and kube-prometheus'
KubeNodeNotReady and KubeNodeUnreachable, all labelled ``node`` (kube-state-metrics' label). Every alert
that is not passed on is logged with its reason: a refusal event for a malformed value, an alert without
the node label (which labels it has instead), an alert that is not a node-down alert, and the truncated ones.
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
  - Output is one event per node-down alert (O(node_down_alerts)), with keys node, status (firing or resolved),
    alertname, fingerprint, starts_at, nodes_down (number of nodes with a firing node-down alert, across posts, plus
    the alerts Alertmanager left out of this post, C(truncatedAlerts)), down_nodes (the names seen) and
    truncated_alerts. The original alert and the webhook's meta (request headers) are not passed on.
  - Every value is checked; node must be a Kubernetes node name (DNS-1123 subdomain, at most 253 characters),
    fingerprint hexadecimal, status firing or resolved, alertname a Prometheus name, starts_at an RFC 3339 time.
    An alert that fails a check becomes one event with the single key nodeguard_refused (the reason, with the
    offending value escaped) and is not counted. The rulebook logs it and runs nothing.
  - An event that is not an Alertmanager payload becomes a refusal event too. Every other alert that is not passed on
    becomes a refusal event saying why (no node label, with the labels it has; not a node-down alert), and a post
    with truncated alerts adds one saying how many count as down.
options:
  node_label:
    description: Alert label that names the Kubernetes node.
    type: str
    default: node
  node_down_alerts:
    description: Alert names that mean "this node is down"; only these are passed on and count towards nodes_down.
    type: list
    default: [NodeguardNodeDown, KubeNodeNotReady, KubeNodeUnreachable]
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
        node_down_alerts: [NodeguardNodeDown, KubeNodeNotReady, KubeNodeUnreachable]
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
NODE_DOWN_ALERTS = ("NodeguardNodeDown", "KubeNodeNotReady", "KubeNodeUnreachable")
# Labels that name a node in other rule sets: said in the log line of an alert without the node label.
OTHER_NODE_LABELS = ("instance", "kubernetes_node", "nodename", "hostname")

# (node name, alert name) -> monotonic time of its latest firing node-down alert. One rulebook process, one view.
_down_since_seen: dict[tuple[str, str], float] = {}


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
        names = sorted(str(key) for key in labels)[:20]
        others = [name for name in names if name in OTHER_NODE_LABELS]
        hint = f" (it has {', '.join(others)}: set the rule's node label to {node_label})" if others else ""
        shown_names = ", ".join(_names.shown(name) for name in names) or "none"
        return None, f"alert {_names.shown(labels.get('alertname', ''))} has no label {node_label}{hint}, so it names no node (labels: {shown_names})"
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


def _track(alerts: list[dict[str, str]], ttl: float) -> None:
    """Count node-down alerts per (node, alert name): a node is down while any of its node-down alerts fires."""
    now = time.monotonic()
    for alert in alerts:
        key = (alert["node"], alert["alertname"])
        if alert["status"] == "firing":
            _down_since_seen[key] = now
        else:
            _down_since_seen.pop(key, None)
    for key, seen in list(_down_since_seen.items()):
        if now - seen > ttl:
            del _down_since_seen[key]


def _truncated(payload: dict, node_down_alerts: list[str]) -> tuple[int, str]:
    """(alerts left out of this post that count as nodes down, "") or (0, why the count is malformed). They count
    unless the group's common alertname says they are not node-down alerts: unseen, they may be."""
    count = payload.get("truncatedAlerts", 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return 0, f"truncatedAlerts {_names.shown(count)} is not a count"
    common = payload.get("commonLabels")
    alertname = common.get("alertname") if isinstance(common, dict) else None
    return (0 if alertname is not None and alertname not in node_down_alerts else count), ""


def main(
    event: dict[str, Any],
    node_label: str = "node",
    node_down_alerts: list[str] | tuple[str, ...] = NODE_DOWN_ALERTS,
    firing_ttl_seconds: int = 18000,
) -> list[dict[str, Any]]:
    """Return one checked event per node alert of an Alertmanager payload, or refusal events."""
    payload = event.get("payload")
    alerts = payload.get("alerts") if isinstance(payload, dict) else None
    if not isinstance(alerts, list):
        return [refusal("not an Alertmanager webhook payload (no alerts list); ignored")]

    node_down_alerts = list(node_down_alerts)
    truncated, why = _truncated(payload, node_down_alerts)
    if why:
        return [refusal(f"not an Alertmanager webhook payload ({why}); ignored")]
    good, refused = [], []
    for alert in alerts:
        fields, why = _checked(alert, node_label)
        if fields is None:
            refused.append(refusal(f"alert refused, nothing runs for it: {why}"))
        elif fields["alertname"] not in node_down_alerts:
            refused.append(
                refusal(
                    f"alert dropped, nothing runs for it: {fields['alertname']} for node {fields['node']} "
                    f"is not a node-down alert ({', '.join(node_down_alerts)})"
                )
            )
        else:
            good.append(fields)
    if truncated:
        refused.append(
            refusal(
                f"{truncated} alerts of this group were left out by Alertmanager (truncatedAlerts, the "
                "receiver's max_alerts): nothing runs for them, and they count as nodes down"
            )
        )

    # The whole POST is counted before any of its alerts is emitted, so every alert of a
    # storm that arrives in one POST sees the full count.
    _track(good, float(firing_ttl_seconds))
    down_nodes = sorted({node for node, _alertname in _down_since_seen})
    # No meta: the webhook's (request headers) is not passed on; ansible-rulebook adds its own after this filter.
    counts = {"nodes_down": len(down_nodes) + truncated, "down_nodes": down_nodes, "truncated_alerts": truncated}
    events = [dict(fields, **counts) for fields in good]
    return refused + events
