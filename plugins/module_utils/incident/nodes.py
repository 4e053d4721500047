# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts read off Node and Lease objects (plain API dicts)."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time

OUT_OF_SERVICE_KEY = "node.kubernetes.io/out-of-service"
OUT_OF_SERVICE_TAINT = {"key": OUT_OF_SERVICE_KEY, "value": "nodeshutdown", "effect": "NoExecute"}
ETCD_LABEL = "node-role.kubernetes.io/etcd"  # RKE2 and k3s etcd members, also etcd-only nodes
CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master", ETCD_LABEL)


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


def is_control_plane(node: dict, etcd_nodes=()) -> bool:
    """A control-plane role label, the etcd role label, or a node known to run an etcd static pod
    (``etcd_nodes``, see safety.etcd_nodes): losing any of them risks etcd quorum, whatever the other labels say."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(label in labels for label in CONTROL_PLANE_LABELS) or (node.get("metadata") or {}).get("name") in etcd_nodes


def identity(node: dict) -> dict:
    """Who this Node is: the API object's UID, the kubelet's boot ID and the machine's SMBIOS system UUID.

    A restart changes ``boot_id``; the same machine keeps ``system_uuid``; a deleted and re-created Node
    object gets a new ``uid``."""
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return {
        "uid": (node.get("metadata") or {}).get("uid"),
        "boot_id": info.get("bootID") or None,
        "system_uuid": info.get("systemUUID") or None,
    }


def taints(node: dict) -> list:
    return list((node.get("spec") or {}).get("taints") or [])


def has_out_of_service_taint(node: dict) -> bool:
    return any(t.get("key") == OUT_OF_SERVICE_KEY for t in taints(node))


def taints_with_out_of_service(node: dict) -> list:
    return [t for t in taints(node) if t.get("key") != OUT_OF_SERVICE_KEY] + [dict(OUT_OF_SERVICE_TAINT)]


def taints_without_out_of_service(node: dict) -> list:
    return [t for t in taints(node) if t.get("key") != OUT_OF_SERVICE_KEY]


def lease_renew_time(lease):
    """The Lease's renewTime as epoch seconds (the kubelet's own clock), or None."""
    return parse_time(((lease or {}).get("spec") or {}).get("renewTime"))


def lease_renewed_since(lease, baseline) -> bool:
    """True when the Lease was renewed after ``baseline`` (a renewTime seen earlier, or None for "no renewal
    seen"). Both values come from the API, so no local clock is compared with a remote one."""
    renewed = lease_renew_time(lease)
    if renewed is None:
        return False
    return baseline is None or renewed > baseline
