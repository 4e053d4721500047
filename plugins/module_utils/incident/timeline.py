# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incident timeline, from the power event or the first NotReady to Ready again, as rows and as a plain-text table.

Between the start and the proofs come the proof phase's readings (record ``readings``: each power reading, the Lease
watch's start, the moment NotReady and the Lease's silence first held), so the overlap of the proofs with the waits shows."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time

_MILESTONES = (
    ("power_event", "time", "power event (BMC: Off)"),  # the power-event path only
    ("first_not_ready", None, "node NotReady (first seen)"),
    ("steps", "fence", "fenced (powered off)"),
    ("steps", "prove", "power-off proven"),
    ("steps", "taint", "out-of-service taint added"),
    ("steps", "delete-pods", "remaining pods force-deleted"),
    ("steps", "detach-volumes", "volumes detached"),
    ("steps", "verify-replacements", "replacements Ready"),
    ("ready_again", None, "node Ready again"),
    ("steps", "recover", "taint removed"),
)


def rows(record: dict) -> list:
    """[{event, time, seconds}] for the milestones the record has, seconds counted from the power event
    (power-event path) or the first NotReady."""
    origin = parse_time((record.get("power_event") or {}).get("time") or record.get("first_not_ready"))
    result = []
    readings = [(r["time"], f"{r['reading']}: {r['result']}") for r in record.get("readings") or [] if r.get("time")]
    for field, step, label in _MILESTONES:
        if field == "steps" and readings:  # the proof phase's readings come before the first step
            for stamp, label_of_reading in readings:
                origin = origin if origin is not None else parse_time(stamp)
                result.append({"event": label_of_reading, "time": stamp, "seconds": round(parse_time(stamp) - origin, 1)})
            readings = []
        if step is None:
            stamp = record.get(field)
        elif field != "steps":
            stamp = (record.get(field) or {}).get(step)
        else:
            entry = (record.get("steps") or {}).get(step) or {}
            if entry.get("outcome") == "skipped":
                continue
            stamp = entry.get("end")
        if not stamp:
            continue
        moment = parse_time(stamp)
        if origin is None:
            origin = moment
        result.append({"event": label, "time": stamp, "seconds": round(moment - origin, 1)})
    return result


def table(timeline_rows: list) -> str:
    header = ("event", "time (UTC)", "+seconds")
    lines = [header] + [(r["event"], r["time"], f"{r['seconds']:.1f}") for r in timeline_rows]
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    out = []
    for index, line in enumerate(lines):
        out.append("  ".join(cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(line)))
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
