# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Predicted seconds from a node's power-off to each failover event.

Every event is a window {min, expected, max}: min and max are the best and worst alignment of
the heartbeat and the controller's monitor tick, expected is the mean over a uniformly random
power-off moment. docs/settings.md ("Timeline") derives each formula.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.model.detection import not_ready_window
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediated import remediated_timeline
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import remediation_settings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.tcp import (
    keepalive_timeout_seconds,
    next_retransmission_gap,
    retransmission_timeout_seconds,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import Timings

# Documented assumptions (docs/settings.md "Timeline").
TAINT_PASS_SECONDS = 0.1  # the NoExecute tainting pass runs every 100ms
POD_NOT_READY_PROPAGATION = (0.0, 0.5, 1.0)  # pod Ready=false writes + EndpointSlice controller sync
REPLACEMENT_POD_START = (1.0, 3.0, 8.0)  # schedule, start (image cached) and pass readiness
FORCE_DETACH_WAIT_SECONDS = 360.0  # attach-detach reconcilerMaxWaitForUnmountDuration, hard-coded
# statefulset_replaced is node-outage's remediated timeline when NotReady starts it (model/remediated.py).

EVENTS = (
    "not_ready",
    "unreachable_taint",
    "endpoint_removed",
    "taint_eviction",
    "deployment_replaced",
    "force_detach",
    "statefulset_replaced_unremediated",
    "statefulset_replaced",
    "dead_tcp_in_flight",
    "dead_tcp_idle",
)


def _window(low, expected, high, note=None) -> dict:
    window = {"min": _round(low), "expected": _round(expected), "max": _round(high)}
    if note:
        window["note"] = note
    return window


def _never(note: str) -> dict:
    return {"min": None, "expected": None, "max": None, "note": note}


def _round(value):
    return None if value is None else round(value, 2)


def _shift(window: dict, low: float, expected: float, high: float, note=None) -> dict:
    return _window(window["min"] + low, window["expected"] + expected, window["max"] + high, note)


def predict_timeline(timings: Timings, remediation: dict | None = None) -> dict:
    """Every event's window for these timings. ``remediation``: node-outage's timing values in effect; None is
    the profile's own (model/remediation.py), what tune-failover records when it applies these timings."""
    not_ready = not_ready_window(timings)
    taint = _shift(not_ready, 0.0, TAINT_PASS_SECONDS / 2, TAINT_PASS_SECONDS,
                   "one node at a time; a zone with more NotReady nodes is tainted at the eviction rate")
    endpoints = _shift(not_ready, *POD_NOT_READY_PROPAGATION,
                       note="the controller sets the node's pods Ready=false as it marks the node")
    toleration = timings.unreachable_toleration_seconds
    eviction = _shift(taint, toleration, toleration, toleration,
                      "pods with the default unreachable toleration; DaemonSet and static pods stay")
    replaced = _shift(eviction, *REPLACEMENT_POD_START,
                      note="stateless pod without RWO volumes; start time is an assumption")
    if timings.disable_force_detach_on_timeout:
        detach = _never("--disable-force-detach-on-timeout: only the out-of-service taint detaches the volumes")
    else:
        detach = _shift(eviction, FORCE_DETACH_WAIT_SECONDS, FORCE_DETACH_WAIT_SECONDS, FORCE_DETACH_WAIT_SECONDS,
                        "6 minutes after the pods are deleted; at once with the out-of-service taint")
    remediation = remediation or remediation_settings(timings)
    remediated = remediated_timeline(timings, "node-watch", remediation)["statefulset_replaced"]
    retries = timings.tcp_retries2
    in_flight = retransmission_timeout_seconds(retries)
    idle = keepalive_timeout_seconds(timings.tcp_keepalive_time, timings.tcp_keepalive_intvl,
                                     timings.tcp_keepalive_probes)
    return {
        "not_ready": not_ready,
        "unreachable_taint": taint,
        "endpoint_removed": endpoints,
        "taint_eviction": eviction,
        "deployment_replaced": replaced,
        "force_detach": detach,
        "statefulset_replaced_unremediated": _never(
            "the pod stays Terminating until the node returns, is deleted, or gets the out-of-service taint"),
        "statefulset_replaced": _window(remediated["min"], remediated["expected"], remediated["max"],
                                        f"node_outage.yml started at NotReady, acting after {remediation['not_ready_seconds']}s "
                                        "NotReady (remediation.not_ready_seconds) and two Off readings 5s apart; start-up "
                                        "and replacement times measured on the lab (model/remediated.py)"),
        "dead_tcp_in_flight": _window(in_flight, in_flight, in_flight + next_retransmission_gap(retries),
                                      f"tcp_retries2={retries}: applies while data is unacknowledged"),
        "dead_tcp_idle": _window(idle, idle, idle, "keepalive time + intvl x probes: applies to idle sockets "
                                 "with SO_KEEPALIVE; containers use their own namespace's values"),
    }
