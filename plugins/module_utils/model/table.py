# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A before/after table of two profiles' timelines and load, for people reading a playbook run."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timeline import EVENTS

LABELS = {
    "not_ready": "node NotReady",
    "unreachable_taint": "unreachable taint",
    "endpoint_removed": "endpoints removed",
    "taint_eviction": "pods evicted",
    "deployment_replaced": "Deployment pod replaced",
    "force_detach": "volumes force-detached",
    "statefulset_replaced_unremediated": "StatefulSet pod replaced (alone)",
    "statefulset_replaced": "StatefulSet pod replaced (node_outage.yml)",
    "dead_tcp_in_flight": "dead TCP (data in flight)",
    "dead_tcp_idle": "dead TCP (idle, keepalive)",
}


def format_seconds(seconds) -> str:
    if seconds is None:
        return "never"
    if seconds >= 120:
        minutes, rest = divmod(round(seconds), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h{minutes:02d}m{rest:02d}s" if hours else f"{minutes}m{rest:02d}s"
    return f"{seconds:.1f}s"


def _cell(window) -> str:
    if not isinstance(window, dict) or window.get("expected") is None:
        return "never"
    return f"{format_seconds(window['expected'])} ({format_seconds(window['min'])}-{format_seconds(window['max'])})"


def _rate(value, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "B/s":
        for factor, prefix in ((1e6, "MB/s"), (1e3, "kB/s")):
            if value >= factor:
                return f"{value / factor:.1f} {prefix}"
        return f"{value:.0f} B/s"
    return f"{value:.1f}/s"


def _check(profile, name: str) -> dict:
    if not isinstance(profile, dict) or not isinstance(profile.get("timeline"), dict):
        raise ProfileError("wrong-type", f"{name} must be a profile returned by failover_profile or failover_timeline")
    return profile


def _title(profile: dict) -> str:
    return str(profile.get("preset") or "?")


def timeline_table(before, after) -> str:
    """Plain-text table: one row per event, expected value with (min-max), then heartbeat load."""
    before = _check(before, "profile_before")
    after = _check(after, "profile_after")
    nodes = (after.get("load") or {}).get("node_count")
    rows = [("seconds after power-off", f"before: {_title(before)}", f"after: {_title(after)}")]
    for event in EVENTS:
        rows.append((LABELS[event], _cell(before["timeline"].get(event)), _cell(after["timeline"].get(event))))
    for key, label, unit in (("writes_per_second", "heartbeat writes", "/s"),
                             ("bytes_per_second", "heartbeat bytes", "B/s")):
        rows.append((f"{label} ({nodes} nodes)", _rate((before.get("load") or {}).get(key), unit),
                     _rate((after.get("load") or {}).get(key), unit)))
    for name, profile in (("before", before), ("after", after)):
        for problem in profile.get("violations") or []:
            rows.append((f"violation ({name})", str(problem.get("rule")), ""))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = []
    for index, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)
