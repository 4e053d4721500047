# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The power-event path's own checks: the event time it was started with, and the Lease against it.

A BMC's power event (Redfish ResourcePoweredOff, or a polled On -> Off) only STARTS a run; nothing in it
is proof. The run then proves, instead of NotReady in the API (the node may still be Ready there):

- the event time is a well-formed RFC 3339 time that was neither ahead of its arrival (beyond
  MAX_CLOCK_SKEW_SECONDS) nor older than power_event_max_age_seconds when it arrived (a replayed or stale event
  starts nothing). The arrival is power_event_received, the rulebook's own clock when it received the event
  (ansible-rulebook's meta.received_at): the time a run waits in the rulebook's queue behind other nodes' runs
  does not count, and this run never compares the BMC's time with its own wall clock. A run started by hand
  (no power_event_received) receives its event when it starts;
- the node's Lease was not renewed after the event time (a renewal after it means the kubelet lived:
  refused, naming both times), and it does not change while the run watches it, on the controller's own
  monotonic clock, for one renew interval (a quarter of the Lease's leaseDurationSeconds) plus a margin,
  so a live kubelet would have renewed it meanwhile (proofs.LeaseWatch; a change refuses);
- the BMC reads Off twice with its identity shown (power/identity.py), as on every path; On is a refusal.

The renewTime is the kubelet's clock and the event time the BMC's: with clocks apart, a renewal just
before the power-off can look like one after it. That refuses (the safe direction); keep clocks in sync.
Neither is ever compared with the controller's clock as proof of silence: a kubelet whose clock lags still
changes its Lease every renew interval, and the watch sees that change.
"""

from __future__ import annotations

import re

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import lease_renew_time
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time, parse_time

TRIGGER = "power-event"
HEARTBEAT = "heartbeat"
MAX_CLOCK_SKEW_SECONDS = 30

# RFC 3339 date-time with a time zone (Z or an offset); fractions up to nanoseconds. A space for the T, as
# RFC 3339 allows: an unquoted time in a YAML vars file reaches the module as str(datetime), with a space.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")


def parse_event_time(text, option: str = "power_event_time") -> float:
    """Epoch seconds of an RFC 3339 time with a zone; refused (rule ``power-event-time``) otherwise. ``option``
    names the option the time came from."""
    if not isinstance(text, str) or not _RFC3339.match(text):
        raise RefusedError(
            "power-event-time",
            f"{option} {text!r} is not an RFC 3339 time with a zone (like 2026-11-23T08:00:00Z); nothing was changed",
        )
    try:
        return parse_time(text.upper())
    except ValueError as e:
        raise RefusedError("power-event-time", f"{option} {text!r} is not a valid time ({e}); nothing was changed") from e


def check_event_age(event_time: float, arrived: float, max_age_seconds: float, arrival: str = "the rulebook received it") -> None:
    """Refuse an event that was more than MAX_CLOCK_SKEW_SECONDS ahead of its arrival, or older than ``max_age_seconds``
    when it arrived. ``arrived`` is the receiver's own clock at the arrival, which ``arrival`` names."""
    shown = format_time(event_time)
    if event_time - arrived > MAX_CLOCK_SKEW_SECONDS:
        raise RefusedError(
            "power-event-time",
            f"the power event time {shown} was {event_time - arrived:.0f}s in the future when {arrival} (more than {MAX_CLOCK_SKEW_SECONDS}s "
            "of clock skew): set the BMC's clock by NTP, as this controller's; nothing was changed",
        )
    if arrived - event_time > max_age_seconds:
        raise RefusedError(
            "power-event-time",
            f"the power event at {shown} was {arrived - event_time:.0f}s old when {arrival}, older than "
            f"power_event_max_age_seconds ({max_age_seconds:.0f}s): a stale or replayed event starts nothing. If the node "
            "is still down, run node-outage for it without power_event_time (the heartbeat path proves it down), and "
            "check that the BMC's clock is set by NTP. Nothing was changed",
        )


def check_lease_not_renewed_since(lease, event_time: float, node: str) -> None:
    """Refuse (rule ``lease-renewed``) when the node's Lease was renewed after the power event: its kubelet lived."""
    renewed = lease_renew_time(lease)
    if renewed is not None and renewed > event_time:
        raise RefusedError(
            "lease-renewed",
            f"the Lease of {node} was renewed at {format_time(renewed)}, after the power event at {format_time(event_time)}: "
            "its kubelet lived after the event (or the clocks of BMC and node disagree); nothing was changed",
        )
