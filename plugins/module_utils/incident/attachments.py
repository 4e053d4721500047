# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""VolumeAttachments still binding volumes to the dead node, described as blockers an SRE can act on."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time


def on_node(attachments: list, node: str) -> list:
    return [va for va in attachments if (va.get("spec") or {}).get("nodeName") == node]


def blockers(attachments: list, now: float) -> list:
    """One line of facts per VolumeAttachment: PV, CSI driver, age, attach state and the last detach error."""
    result = []
    for va in attachments:
        spec = va.get("spec") or {}
        status = va.get("status") or {}
        created = parse_time((va.get("metadata") or {}).get("creationTimestamp"))
        detach_error = (status.get("detachError") or {}).get("message")
        result.append(
            {
                "name": va["metadata"]["name"],
                "pv": (spec.get("source") or {}).get("persistentVolumeName") or "(inline volume)",
                "driver": spec.get("attacher"),
                "age_seconds": round(now - created) if created else None,
                "attached": bool(status.get("attached")),
                "deleting": bool((va.get("metadata") or {}).get("deletionTimestamp")),
                "detach_error": detach_error,
            }
        )
    return sorted(result, key=lambda b: b["name"])


def describe(blocker_list: list) -> str:
    return "; ".join(
        f"{b['name']} (pv {b['pv']}, driver {b['driver']}, age {b['age_seconds']}s"
        + (f", detach error: {b['detach_error']}" if b["detach_error"] else "")
        + ")"
        for b in blocker_list
    )
