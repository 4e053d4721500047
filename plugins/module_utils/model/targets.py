# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Settings for explicit targets: detect a dead node within detect_seconds, evict within evict_seconds.

Both targets are expected values (the mean over the power-off moment, see timeline.py). The monitor
period is about an eighth of the detection target; then the longest Lease (fewest heartbeat writes)
that still meets the target wins, with the shortest grace the rules allow for it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.numbers import blank, numeric
from ansible_collections.nodeguard.failover.plugins.module_utils.model.rules import NODE_STATUS_UPDATE_RETRY, Limits
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timeline import TAINT_PASS_SECONDS, not_ready_window
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import Timings, kubernetes_defaults
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import Version

MONITOR_PERIODS = (0.5, 1.0, 2.0, 5.0)
LONGEST_LEASE = 240
# Explicit targets get the balanced preset's TCP values; override them individually if needed.
TARGET_TCP = {"tcp_retries2": 8, "tcp_keepalive_time": 60, "tcp_keepalive_intvl": 10, "tcp_keepalive_probes": 6}


def _target(value, name: str):
    if blank(value):
        return None
    value = value if numeric(value) is None else numeric(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ProfileError("wrong-type", f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def _grace_for(lease: int, period: float, limits: Limits) -> float:
    """The shortest grace, in whole monitor periods, that passes the heartbeat and floor rules."""
    renew = lease / 4.0
    needed = max(renew * NODE_STATUS_UPDATE_RETRY + 0.001, limits.grace_floor(), float(lease), 2 * period)
    return math.ceil(round(needed / period, 6)) * period


def _cheapest_detection(base: Timings, detect: float, limits: Limits) -> Timings:
    shortest_lease = max(1, math.ceil(limits.heartbeat_floor() * 4 - 1e-9))
    # A monitor period near an eighth of the target keeps the tick's share of the delay small;
    # a shorter one is tried only when no Lease meets the target with it.
    preferred = [period for period in MONITOR_PERIODS if period <= detect / 8] or [MONITOR_PERIODS[0]]
    periods = [preferred[-1]] + [period for period in reversed(MONITOR_PERIODS) if period < preferred[-1]]
    for period in periods:
        for lease in range(LONGEST_LEASE, shortest_lease - 1, -1):
            grace = _grace_for(lease, period, limits)
            candidate = replace(base, node_lease_duration_seconds=lease, node_monitor_period=period,
                                node_monitor_grace_period=grace,
                                node_startup_grace_period=max(base.node_startup_grace_period, grace))
            if not_ready_window(candidate)["expected"] <= detect:
                return candidate
    fastest = _fastest_possible(base, limits)
    raise ProfileError("target-unreachable", (
        f"detect_seconds {detect:g} cannot be met by consistent settings; the fastest expected detection is "
        f"{not_ready_window(fastest)['expected']}s (Lease {fastest.node_lease_duration_seconds}s, "
        f"grace {fastest.node_monitor_grace_period:g}s)"))


def _fastest_possible(base: Timings, limits: Limits) -> Timings:
    lease = max(1, math.ceil(limits.heartbeat_floor() * 4 - 1e-9))
    period = MONITOR_PERIODS[0]
    grace = _grace_for(lease, period, limits)
    return replace(base, node_lease_duration_seconds=lease, node_monitor_period=period, node_monitor_grace_period=grace)


def timings_for_targets(version: Version, detect_seconds, evict_seconds, limits: Limits) -> Timings:
    detect = _target(detect_seconds, "detect_seconds")
    evict = _target(evict_seconds, "evict_seconds")
    base = replace(kubernetes_defaults(version), node_status_update_frequency=10.0,
                   node_status_report_frequency=300.0, **TARGET_TCP)
    if detect is None:
        # Keep the stock detection time, but on consistent settings (stock breaks heartbeat-retries).
        detect = not_ready_window(base)["expected"]
    timings = _cheapest_detection(base, detect, limits)
    if evict is None:
        return timings
    expected_not_ready = not_ready_window(timings)["expected"]
    toleration = math.floor(evict - expected_not_ready - TAINT_PASS_SECONDS / 2)
    if toleration < timings.node_monitor_grace_period:
        raise ProfileError("target-unreachable", (
            f"evict_seconds {evict:g} leaves a toleration of {toleration}s after the expected detection at "
            f"{expected_not_ready}s; tolerations must be at least the grace period "
            f"({timings.node_monitor_grace_period:g}s, rule toleration-vs-grace): ask for at least "
            f"{math.ceil(expected_not_ready + timings.node_monitor_grace_period + TAINT_PASS_SECONDS)}s"))
    return replace(timings, not_ready_toleration_seconds=toleration, unreachable_toleration_seconds=toleration)
