# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts read off Node and Lease objects (plain API dicts)."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time

OUT_OF_SERVICE_KEY = "node.kubernetes.io/out-of-service"
OUT_OF_SERVICE_TAINT = {"key": OUT_OF_SERVICE_KEY, "value": "nodeshutdown", "effect": "NoExecute"}
CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")


def ready_condition(node: dict):
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition
    return None


def ready_status(node: dict) -> str:
    """'True', 'False', 'Unknown', or 'Unknown' when the condition is missing."""
    condition = ready_condition(node)
    return (condition or {}).get("status") or "Unknown"


def is_ready(node: dict) -> bool:
    return ready_status(node) == "True"


def ready_since(node: dict):
    """Epoch of the Ready condition's last transition (when it became its current status)."""
    return parse_time((ready_condition(node) or {}).get("lastTransitionTime"))


def is_control_plane(node: dict) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(label in labels for label in CONTROL_PLANE_LABELS)


def taints(node: dict) -> list:
    return list((node.get("spec") or {}).get("taints") or [])


def has_out_of_service_taint(node: dict) -> bool:
    return any(t.get("key") == OUT_OF_SERVICE_KEY for t in taints(node))


def taints_with_out_of_service(node: dict) -> list:
    return [t for t in taints(node) if t.get("key") != OUT_OF_SERVICE_KEY] + [dict(OUT_OF_SERVICE_TAINT)]


def taints_without_out_of_service(node: dict) -> list:
    return [t for t in taints(node) if t.get("key") != OUT_OF_SERVICE_KEY]


def lease_age(lease: dict, now: float):
    """(seconds since last renew, leaseDurationSeconds) or (None, None) without a renewTime."""
    spec = (lease or {}).get("spec") or {}
    renewed = parse_time(spec.get("renewTime"))
    if renewed is None:
        return None, None
    return now - renewed, spec.get("leaseDurationSeconds") or 40
