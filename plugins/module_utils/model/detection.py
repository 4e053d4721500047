# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When the node lifecycle controller marks a powered-off node NotReady: the start of every timeline.

model/timeline.py builds the failover events on it, model/remediated.py node-outage's remediated timelines.
docs/settings.md ("Timeline model") derives the formula.
"""

from __future__ import annotations

import math

from ansible_collections.nodeguard.failover.plugins.module_utils.model.heartbeat import heartbeat_interval
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import Timings


def detection_delay(timings: Timings) -> float:
    """Seconds from the controller first seeing the last heartbeat to marking the node Unknown.

    The controller checks every monitor period and marks the node at the first check later than
    probe time + grace, so the grace is rounded up to whole monitor periods.
    """
    periods = math.ceil(timings.node_monitor_grace_period / timings.node_monitor_period - 1e-9)
    return periods * timings.node_monitor_period


def not_ready_window(timings: Timings) -> dict:
    """Power-off to Ready=Unknown, {min, expected, max}.

    The last heartbeat lands up to one heartbeat interval H before the power-off; the controller
    sees it at its next tick (up to one monitor period P later) and marks the node after the grace.
    """
    interval = heartbeat_interval(timings)
    period = timings.node_monitor_period
    delay = detection_delay(timings)
    low, expected, high = max(0.0, delay - interval), delay - interval / 2 + period / 2, delay + period
    return {"min": round(low, 2), "expected": round(expected, 2), "max": round(high, 2)}
