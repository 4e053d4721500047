# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incident record kept on the Node, and the resume state machine that reads it.

The record is one JSON annotation (``failover.nodeguard.io/incident``) plus a short phase annotation
(``failover.nodeguard.io/phase``) for kubectl. It is first written in the same conditional patch that
adds the taint, so a taint placed by this collection never exists without its record.
"""

from __future__ import annotations

import json

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint, identity
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time, parse_time

ANNOTATION = "failover.nodeguard.io/incident"
PHASE_ANNOTATION = "failover.nodeguard.io/phase"
RECORD_VERSION = 1

OUTAGE_STEPS = ("prove", "fence", "taint", "delete-pods", "detach-volumes", "verify-replacements")
RECOVER_STEP = "recover"

OUTAGE_COMPLETE = "outage-complete"
INTERRUPTED = "interrupted"
RECOVERED = "recovered"

# What a run does with a node, decided from its taint and record (see decide()).
FRESH = "fresh"  # no incident under way: prove from scratch
ADOPT = "adopt"  # taint without our record (placed by hand or another tool): prove, then record it
RESUME = "resume"  # our record, steps left: continue at the first unfinished step
COMPLETE = "complete"  # outage done, waiting for node-recover
STOPPED = "stopped"  # the node came back mid-run: only node-recover may continue


def read(node: dict):
    """The record on a Node, or None. A record that cannot be parsed is refused, never overwritten blindly."""
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError as e:
        raise RefusedError("record-unreadable", f"annotation {ANNOTATION} is not JSON ({e}); fix or remove it") from e
    if not isinstance(record, dict) or "steps" not in record:
        raise RefusedError("record-unreadable", f"annotation {ANNOTATION} is not an incident record")
    missing = [key for key in ("id", "node") if not isinstance(record.get(key), str) or not record.get(key)]
    if missing:
        raise RefusedError(
            "record-unreadable",
            f"annotation {ANNOTATION} is an incident record without {' and '.join(repr(k) for k in missing)}: it was not "
            "written by nodeguard (or was edited); it proves nothing. Check it, then remove it. Nothing was changed",
        )
    name = (node.get("metadata") or {}).get("name")
    if name and record["node"] != name:
        raise RefusedError(
            "record-unreadable",
            f"annotation {ANNOTATION} on node {name} is the record of node {record['node']!r} (incident {record['id']}): "
            "copied or edited, it proves nothing. Check it, then remove it. Nothing was changed",
        )
    return record


def new(node: dict, job_id: str, now: float, first_not_ready) -> dict:
    """A fresh record. ``identity`` (Node UID, bootID, systemUUID) is set again from the read the taint is
    written against (see set_identity); node-recover compares it to prove a restart of the same machine."""
    name = node["metadata"]["name"]
    return {
        "version": RECORD_VERSION,
        "id": f"{name}-{format_time(now).replace(':', '').replace('-', '')}",
        "node": name,
        "node_uid": node["metadata"].get("uid"),
        "identity": identity(node),
        "job": job_id,
        "phase": OUTAGE_STEPS[0],
        "started": format_time(now),
        "first_not_ready": format_time(first_not_ready) if first_not_ready else None,
        "steps": {},
    }


def set_identity(record: dict, node: dict) -> None:
    record["node_uid"] = node["metadata"].get("uid")
    record["identity"] = identity(node)


def set_trigger(record: dict, event_time=None, ready_since=None) -> None:
    """What started the incident: ``trigger`` heartbeat (NotReady, stale Lease) or power-event, and for the
    latter ``power_event`` with the event ``time`` and ``ready_since`` (the Ready transition the run first
    saw while the node was still Ready in the API, else null). A resumed run judges "back" by them."""
    if event_time is None:
        record["trigger"] = "heartbeat"
        return
    record["trigger"] = "power-event"
    record["power_event"] = {"time": format_time(event_time), "ready_since": format_time(ready_since) if ready_since else None}


def power_event_of(record: dict) -> tuple:
    """(event time, ready_since) as epoch seconds for a power-event incident, (None, None) otherwise."""
    if record.get("trigger") != "power-event":
        return None, None
    event = record.get("power_event") or {}
    return parse_time(event.get("time")), parse_time(event.get("ready_since"))


def trigger_text(record: dict) -> str:
    """One phrase for Events and messages: 'power-event at <time>' or 'heartbeat'."""
    if record.get("trigger") == "power-event":
        return f"power-event at {(record.get('power_event') or {}).get('time')}"
    return record.get("trigger") or "heartbeat"


def start_step(record: dict, step: str, now: float) -> None:
    record["steps"][step] = {"start": format_time(now)}
    record["phase"] = step


def end_step(record: dict, step: str, now: float, outcome: str = "done") -> None:
    entry = record["steps"].setdefault(step, {"start": format_time(now)})
    entry["end"] = format_time(now)
    entry["outcome"] = outcome


def step_done(record: dict, step: str) -> bool:
    return "end" in (record.get("steps") or {}).get(step, {})


def next_step(record: dict):
    """First outage step without an end, or None when the outage part is complete."""
    for step in OUTAGE_STEPS:
        if not step_done(record, step):
            return step
    return None


def decide(node: dict, record) -> tuple:
    """(action, step): what to do with this node. See the constants above."""
    tainted = has_out_of_service_taint(node)
    phase = (record or {}).get("phase")
    if not tainted:
        # No taint: either no incident, a finished one, or a record whose taint someone removed by hand.
        return FRESH, OUTAGE_STEPS[0]
    if record is None or phase == RECOVERED:
        return ADOPT, OUTAGE_STEPS[0]
    if phase == INTERRUPTED:
        return STOPPED, None
    step = next_step(record)
    if step is None:
        return COMPLETE, None
    return RESUME, step


def annotations_patch(record: dict) -> dict:
    return {
        "metadata": {
            "annotations": {
                ANNOTATION: json.dumps(record, sort_keys=True, separators=(",", ":")),
                PHASE_ANNOTATION: record["phase"],
            }
        }
    }
