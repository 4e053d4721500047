# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan a run shows in check mode (and returns in every mode): one line per outage step."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.record import OUTAGE_STEPS, step_done


def _names(entries: list) -> str:
    return ", ".join(f"{e['namespace']}/{e['name']}" for e in entries) or "none"


def outage_plan(record, facts: dict, options) -> list:
    """``facts`` holds what the run saw: proofs, power, fence, pods (classify() output), attachments (names).

    Steps the record shows as done are marked done; the others say what would happen.
    """
    pods = facts.get("pods") or {"delete": [], "skipped": [], "tolerating": []}
    would = {
        "prove": "; ".join(f"{p['name']}: {'OK' if p['ok'] else 'MISSING'} ({p['detail']})" for p in facts.get("proofs", []))
        or "re-check the three power-off proofs",
        "fence": facts.get("fence") or "not requested (fence=false)",
        "taint": "add node.kubernetes.io/out-of-service=nodeshutdown:NoExecute and the incident record, in one conditional write",
        "delete-pods": f"force-delete (grace 0) {len(pods['delete'])} pod(s): {_names(pods['delete'])}; "
        f"leave {len(pods['skipped'])} mirror/DaemonSet pod(s); "
        f"{len(pods['tolerating'])} pod(s) tolerate the taint and will not move: {_names(pods['tolerating'])}",
        "detach-volumes": f"wait up to {options.detach_timeout}s until no VolumeAttachment names the node "
        f"(now: {', '.join(facts.get('attachments') or []) or 'none'})"
        + ("; then delete the rest (opted in)" if options.delete_volume_attachments else "; never delete them"),
        "verify-replacements": f"wait up to {options.replacement_timeout}s for a Ready replacement of every StatefulSet/Deployment pod above"
        if options.verify_replacements
        else "skipped (verify_replacements=false)",
    }
    plan = []
    for step in OUTAGE_STEPS:
        done = bool(record) and step_done(record, step)
        plan.append({"step": step, "status": "done" if done else "pending", "action": would[step]})
    return plan
